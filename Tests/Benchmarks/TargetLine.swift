import Foundation

/// One `target …: met` line of a benchmark's output, in the columns of the table `bench all` ends with.
/// Benchmarks print their lines as `Target.report` does; `TargetLine(benchmark:line:)` reads those and
/// the freer lines of the rest (a figure, maybe `ratio …` or `a / b = x`, then `target …: met`).
struct TargetLine: Equatable {
    var benchmark: String
    var figure: String
    var ratio: String
    var target: String
    var verdict: String

    private nonisolated(unsafe) static let verdictPattern = try! Regex(#":\s*(NOT met|met)\b"#)
    private nonisolated(unsafe) static let segmentSeparator = try! Regex(#"\s{2,}|;\s+"#)

    /// Nil unless `line` has the word `target` and, after it, `: met` or `: NOT met`.
    init?(benchmark: String, line: String) {
        var searchFrom = line.startIndex
        while let word = line[searchFrom...].range(of: "target") {
            searchFrom = word.upperBound
            let wordStarts = word.lowerBound == line.startIndex || line[line.index(before: word.lowerBound)].isWhitespace
            let wordEnds = word.upperBound == line.endIndex || line[word.upperBound] == ":" || line[word.upperBound].isWhitespace
            guard wordStarts, wordEnds, let verdict = line[word.upperBound...].firstMatch(of: Self.verdictPattern) else { continue }
            self.benchmark = benchmark
            target = line[word.upperBound..<verdict.range.lowerBound].trimmingCharacters(in: CharacterSet(charactersIn: ": "))
            let after = line[verdict.range.upperBound...].trimmingCharacters(in: .whitespaces)
            self.verdict = String(line[verdict.range].drop(while: { $0 == ":" || $0.isWhitespace }))
                + (after.first.map { ";,".contains($0) } ?? true ? after : " " + after)
            (figure, ratio) = Self.split(line[..<word.lowerBound].trimmingCharacters(in: CharacterSet(charactersIn: " ;:,(")))
            if figure.isEmpty, target.hasSuffix(")"), let open = target.lastIndex(of: "("),
               target[open...].contains(where: \.isNumber) {
                // `target: within 100 ms (worst 3.1 ms)`: the figure is the parenthesis.
                figure = String(target[target.index(after: open)..<target.index(before: target.endIndex)])
                target = target[..<open].trimmingCharacters(in: .whitespaces)
            }
            return
        }
        return nil
    }

    /// The text before `target`, in columns: `ratio x` and `a / b = x` pieces are the ratio, the rest the figure.
    private static func split(_ text: String) -> (figure: String, ratio: String) {
        var figure: [String] = [], ratio: [String] = []
        for piece in text.split(separator: segmentSeparator).map({ $0.trimmingCharacters(in: .whitespaces) }) where !piece.isEmpty {
            if piece.hasPrefix("ratio ") {
                ratio.append(String(piece.dropFirst("ratio ".count)))
            } else if piece.contains(" / "), piece.contains("=") {
                ratio.append(piece)
            } else {
                figure.append(piece)
            }
        }
        return (figure.joined(separator: " "), ratio.joined(separator: "; "))
    }

    /// The markdown table of `lines`.
    static func markdownTable(_ lines: [TargetLine]) -> String {
        func cell(_ text: String) -> String { text.isEmpty ? "" : text.replacingOccurrences(of: "|", with: "\\|") }
        return (["| benchmark | figure | ratio to its baseline | target | verdict |", "|---|---|---|---|---|"]
            + lines.map { "| " + [$0.benchmark, $0.figure, $0.ratio, $0.target, $0.verdict].map(cell).joined(separator: " | ") + " |" })
            .joined(separator: "\n") + "\n"
    }
}

/// How a benchmark prints a target line: its figure, the figure as a ratio to the baseline measured in
/// the same run, the target, and whether it is met. `bench all` gathers these lines into its table.
enum Target {
    static func report(_ figure: String, ratio: String? = nil, target: String, met: Bool) {
        print("  " + ([figure] + (ratio.map { ["ratio " + $0] } ?? [])).joined(separator: "   ")
              + "   target \(target): " + (met ? "met" : "NOT met"))
    }
}
