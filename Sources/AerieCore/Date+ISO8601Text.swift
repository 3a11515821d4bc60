import Foundation

extension Date {
    /// `formatted(.iso8601)` (`2026-11-25T15:53:00Z`: UTC, whole seconds), without the format
    /// style's machinery: every connection view writes two of them.
    package var iso8601Text: String {
        let seconds = timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 2e11 else { return formatted(.iso8601) }
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return formatted(.iso8601) }
        let year = Int(parts.tm_year) + 1900
        guard (1000...9999).contains(year) else { return formatted(.iso8601) }
        var out = [UInt8](repeating: 0, count: 20)
        func put(_ value: Int, at offset: Int, digits: Int) {
            var value = value
            for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                out[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(year, at: 0, digits: 4)
        out[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, at: 5, digits: 2)
        out[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), at: 8, digits: 2)
        out[10] = UInt8(ascii: "T")
        put(Int(parts.tm_hour), at: 11, digits: 2)
        out[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), at: 14, digits: 2)
        out[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), at: 17, digits: 2)
        out[19] = UInt8(ascii: "Z")
        return String(decoding: out, as: UTF8.self)
    }
}
