import HeapModule

/// The scheduler's queue: entries by the minute of their instant, each minute's entries in an array
/// of its own, sorted only when that minute comes up. A calendar queue, as a kernel's timer wheel:
/// the planner takes occurrences in time order and puts each reminder's next one about a day later,
/// so a pop reads the next entry of one sorted array, and a push appends to the array of tomorrow's
/// same minute, which the pushes before it just touched. A heap of a million entries instead went
/// twenty levels down on each push, missing the cache on most (docs/decisions/0016-planner-deciding-loop.md).
struct MinuteQueue<Element: MinuteOrdered> {
    /// The earliest minute's elements, sorted from largest to smallest (the smallest pops from the end).
    private var current: [Element] = []
    private var currentMinute: Int64 = .min
    /// Every later minute's elements, unsorted.
    private var later: [Int64: [Element]] = [:]
    /// The minutes in `later`.
    private var minutes = Heap<Int64>()
    private(set) var count = 0

    init() {}

    init(_ elements: [Element]) {
        for element in elements { later[element.minute, default: []].append(element) }
        minutes = Heap(later.keys)
        count = elements.count
    }

    var isEmpty: Bool { count == 0 }

    /// The smallest element. Mutating: the earliest minute is sorted when first asked for.
    var min: Element? {
        mutating get {
            if current.isEmpty { takeNextMinute() }
            return current.last
        }
    }

    mutating func insert(_ element: Element) {
        let minute = element.minute
        count += 1
        if minute == currentMinute, !current.isEmpty {
            // Later within the minute being taken (a reminder rescheduled to a few seconds on): in its place.
            current.insert(element, at: firstIndexNotAbove(element))
        } else if minute < currentMinute, !current.isEmpty {
            // Before the minute being taken (a change of zone): that minute goes back, this one comes first.
            later[currentMinute] = current
            minutes.insert(currentMinute)
            current = [element]
            currentMinute = minute
        } else {
            if later[minute]?.append(element) == nil {
                later[minute] = [element]
                minutes.insert(minute)
            }
        }
    }

    /// The two elements after the smallest, where they are in its minute (nearly always): what
    /// comes next, for a caller to prefetch.
    var following: (Element?, Element?) {
        let count = current.count
        return (count >= 2 ? current[count - 2] : nil, count >= 3 ? current[count - 3] : nil)
    }

    @discardableResult
    mutating func removeMin() -> Element? {
        if current.isEmpty { takeNextMinute() }
        guard let smallest = current.popLast() else { return nil }
        count -= 1
        return smallest
    }

    /// Every element, in no order.
    var unordered: [Element] { current + later.values.joined() }

    /// Makes the earliest later minute the current one, sorted.
    private mutating func takeNextMinute() {
        guard let minute = minutes.popMin(), let elements = later.removeValue(forKey: minute) else { return }
        current = elements.sorted(by: >)
        currentMinute = minute
    }

    /// Where `element` goes in `current` (sorted from largest to smallest): after everything larger.
    private func firstIndexNotAbove(_ element: Element) -> Int {
        var low = 0, high = current.count
        while low < high {
            let middle = (low + high) / 2
            if element < current[middle] { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// What `MinuteQueue` holds: ordered, and an element of an earlier minute is smaller.
protocol MinuteOrdered: Comparable {
    var minute: Int64 { get }
}
