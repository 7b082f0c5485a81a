/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and the same sequence on every platform, so
/// fuzz-style and property tests with a fixed seed are repeatable.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (bound > 0). Kept local so the sequence does not depend on the stdlib's
    /// `random(in:using:)` algorithm.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    public mutating func chance(_ numerator: Int, in denominator: Int) -> Bool { below(denominator) < numerator }

    public mutating func pick<Element>(_ elements: [Element]) -> Element { elements[below(elements.count)] }

    public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}
