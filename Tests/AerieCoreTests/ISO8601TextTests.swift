import Foundation
import Testing

@testable import AerieCore

/// Connection views write dates with their own formatter; it must match Foundation's.
@Suite(.timeLimit(.minutes(5))) struct ISO8601TextTests {
    @Test func matchesFoundationsFormatStyle() {
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 0.999_999), Date(timeIntervalSince1970: -0.5),
            Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: 4_102_444_799.9), Date(),
            Date(timeIntervalSince1970: -2_000_000_000.25),
        ]
        for _ in 0..<2_000 { dates.append(Date(timeIntervalSince1970: Double.random(in: -1e10...1e10, using: &generator))) }
        for date in dates {
            #expect(date.iso8601Text == date.formatted(.iso8601), "\(date.timeIntervalSince1970)")
        }
    }
}
