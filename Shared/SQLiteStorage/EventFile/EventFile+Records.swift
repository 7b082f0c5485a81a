import Foundation
import Storage

/// The records' format: how `append` encodes them and how every read decodes them.
extension EventFile {
    /// The records of `events`, laid out as the type's comment says, each with its CRC-32C.
    static func encode(_ events: [PendingEvent]) -> [UInt8] {
        let total = events.reduce(0) { $0 + recordHeader + payloadFixed + $1.topic.utf8.count + $1.envelope.count }
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            var position = 0
            for event in events {
                let topic = event.topic.utf8.count, length = payloadFixed + topic + event.envelope.count
                let payload = position + recordHeader
                bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: position, as: UInt32.self)
                bytes.storeBytes(of: event.seq.littleEndian, toByteOffset: payload, as: Int64.self)
                bytes.storeBytes(of: UInt16(topic).littleEndian, toByteOffset: payload + 8, as: UInt16.self)
                var topicText = event.topic
                topicText.withUTF8 { UnsafeMutableRawBufferPointer(rebasing: bytes[(payload + payloadFixed)...]).copyMemory(from: UnsafeRawBufferPointer($0)) }
                event.envelope.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[(payload + payloadFixed + topic)...]).copyMemory(from: $0) }
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[payload..<payload + length]))
                bytes.storeBytes(of: crc.littleEndian, toByteOffset: position + 4, as: UInt32.self)
                position = payload + length
            }
            count = total
        }
    }

    /// Reads the records between two offsets in large pieces, and calls `body` with each one's
    /// payload and offset; stops where it returns false, and at a record cut short or too large.
    /// Returns the offset after the last whole record it read.
    @discardableResult
    func read(from start: Int, to stop: Int, checked: Bool = false,
                      _ body: (_ payload: UnsafeRawBufferPointer, _ offset: Int) throws -> Bool) throws -> Int {
        // Small at first (an `events.since` page is a few hundred KB at most), doubled as a scan goes on.
        var buffer = [UInt8](repeating: 0, count: min(64 << 10, max(stop - start, Self.recordHeader)))
        var offset = start
        while offset < stop {
            let wanted = min(buffer.count, stop - offset)
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, wanted, offset) }
            guard got > 0 else {
                if got < 0 { throw StorageError.system(path, "reading the event log", errno: errno) }
                return offset
            }
            var position = 0
            var goOn = true
            try buffer.withUnsafeBytes { bytes in
                while goOn, position + Self.recordHeader <= got {
                    let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
                    guard length >= Self.payloadFixed, length <= Self.largestRecord else { goOn = false; return }
                    guard position + Self.recordHeader + length <= got else { break }
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[(position + Self.recordHeader)..<(position + Self.recordHeader + length)])
                    if checked {
                        let crc = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self))
                        let topicLength = Int(UInt16(littleEndian: payload.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
                        guard crc == CRC32C.checksum(payload), Self.payloadFixed + topicLength <= length else { goOn = false; return }
                    }
                    goOn = try body(payload, offset + position)
                    if goOn { position += Self.recordHeader + length }
                }
            }
            if !goOn { return offset + position }
            if position == 0 {
                // One record larger than the buffer: read it whole, or it is cut short.
                let length = buffer.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))) }
                guard Self.recordHeader + length <= stop - offset, buffer.count < Self.recordHeader + length else { return offset }
                buffer = [UInt8](repeating: 0, count: Self.recordHeader + length)
                continue
            }
            offset += position
            if buffer.count < 1 << 20 { buffer = [UInt8](repeating: 0, count: min(buffer.count * 2, 1 << 20)) }
        }
        return offset
    }
}
