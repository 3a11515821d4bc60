import Foundation

/// One `AERIE_*` variable of `aerie-server`: its name, its `--help` line and how its text sets a
/// configuration. The default `--help` shows is read from a configuration that was never set
/// (`AerieConfiguration.environmentDefaults`), so the one place a default is written is the
/// property it belongs to.
struct EnvironmentVariable {
    let name: String
    let help: String
    /// The default as `--help` shows it, from the default configuration; nil shows none.
    let shownDefault: (AerieConfiguration) -> String?
    /// Sets the configuration from the variable's (trimmed, non-empty) text; throws
    /// `AerieConfiguration.Invalid` naming the variable.
    let apply: (String, inout AerieConfiguration) throws -> Void

    init(
        _ name: String, _ help: String, shownDefault: @escaping (AerieConfiguration) -> String?,
        apply: @escaping (String, inout AerieConfiguration) throws -> Void
    ) {
        self.name = name
        self.help = help
        self.shownDefault = shownDefault
        self.apply = apply
    }

    /// A default that is a description rather than a value ("half the pool").
    init(_ name: String, _ help: String, shown: String?, apply: @escaping (String, inout AerieConfiguration) throws -> Void) {
        self.init(name, help, shownDefault: { _ in shown }, apply: apply)
    }

    static func integer(
        _ name: String, _ range: ClosedRange<Int>, _ path: WritableKeyPath<AerieConfiguration, Int>, _ help: String
    ) -> EnvironmentVariable {
        EnvironmentVariable(name, help, shownDefault: { "\($0[keyPath: path])" }) { text, config in
            config[keyPath: path] = try parseInteger(name, text, range)
        }
    }

    /// Whole seconds of a `Duration`.
    static func seconds(
        _ name: String, _ range: ClosedRange<Int>, _ path: WritableKeyPath<AerieConfiguration, Duration>, _ help: String
    ) -> EnvironmentVariable {
        EnvironmentVariable(name, help, shownDefault: { "\($0[keyPath: path].components.seconds)" }) { text, config in
            config[keyPath: path] = .seconds(try parseInteger(name, text, range))
        }
    }

    static func milliseconds(
        _ name: String, _ range: ClosedRange<Int>, _ path: WritableKeyPath<AerieConfiguration, Duration>, _ help: String
    ) -> EnvironmentVariable {
        EnvironmentVariable(name, help, shownDefault: { config in
            let (seconds, attoseconds) = config[keyPath: path].components
            return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000)"
        }) { text, config in
            config[keyPath: path] = .milliseconds(try parseInteger(name, text, range))
        }
    }

    /// `0` or `1`.
    static func flag(_ name: String, _ path: WritableKeyPath<AerieConfiguration, Bool>, _ help: String) -> EnvironmentVariable {
        EnvironmentVariable(name, help, shownDefault: { $0[keyPath: path] ? "1" : "0" }) { text, config in
            switch text {
            case "0": config[keyPath: path] = false
            case "1": config[keyPath: path] = true
            default: throw AerieConfiguration.Invalid(description: "\(name) must be 0 or 1, got '\(text)'")
            }
        }
    }

    static func parseInteger(_ name: String, _ text: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw AerieConfiguration.Invalid(
                description: "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// The variable's `--help` line: the name in a column, the help, the default in parentheses.
    func helpLine(defaults: AerieConfiguration) -> String {
        let column = name.count < 28 ? name.padding(toLength: 28, withPad: " ", startingAt: 0) : name
        let shown = shownDefault(defaults).map { " (\($0))" } ?? ""
        return "  \(column) \(help)\(shown)"
    }
}
