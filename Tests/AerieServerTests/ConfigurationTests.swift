import AerieServer
import AerieTesting
import Foundation
import Testing

/// `aerie-server`'s environment: the operator variables of issue 18 parse and refuse clearly,
/// and every variable `--help` lists is in the example environment file operators start from.
@Suite struct ConfigurationTests {
    @Test func operatorVariables() throws {
        let defaults = try AerieConfiguration.fromEnvironment([:])
        #expect(defaults.metricsListen == AerieConfiguration.defaultMetricsListen)
        #expect(defaults.logFormat == .text)
        #expect(defaults.deliveryLeaseSeconds == 120)

        let set = try AerieConfiguration.fromEnvironment([
            "AERIE_METRICS_LISTEN": "[::1]:9100", "AERIE_LOG_FORMAT": "JSON", "AERIE_DELIVERY_LEASE_SECONDS": "30",
        ])
        #expect(set.metricsListen == AerieConfiguration.ListenAddress(host: "::1", port: 9100))
        #expect(set.logFormat == .json)
        #expect(set.deliveryLeaseSeconds == 30)
        #expect(try AerieConfiguration.fromEnvironment(["AERIE_METRICS_LISTEN": "off"]).metricsListen == nil)
        // A configuration made in code (tests, embedders) opens no operator port unless asked.
        #expect(AerieConfiguration().metricsListen == nil)

        for (variable, value) in [
            ("AERIE_METRICS_LISTEN", "7402"), ("AERIE_LOG_FORMAT", "xml"), ("AERIE_DELIVERY_LEASE_SECONDS", "1"),
        ] {
            #expect {
                _ = try AerieConfiguration.fromEnvironment([variable: value])
            } throws: { error in
                "\(error)".contains(variable)
            }
        }
    }

    @Test func theExampleEnvironmentFileListsEveryVariable() throws {
        let example = try String(
            contentsOf: ACAPyAgent.packageRoot.appendingPathComponent("deploy/aerie.env.example"), encoding: .utf8)
        let listed = AerieConfiguration.environmentHelp.split(separator: "\n").compactMap { line -> String? in
            let name = line.trimmingCharacters(in: .whitespaces).prefix(while: { $0.isUppercase || $0 == "_" || $0.isNumber })
            return name.hasPrefix("AERIE_") ? String(name) : nil
        }
        #expect(listed.count > 30)
        for variable in listed {
            #expect(example.contains("\(variable)="), "deploy/aerie.env.example does not mention \(variable)")
        }
    }
}
