import AerieServer
import AerieTesting
import Foundation
import Testing

/// `aerie-server`'s environment: the operator variables of issue 18 parse and refuse clearly,
/// and every variable `--help` lists is in the example environment file operators start from.
@Suite(.timeLimit(.minutes(10))) struct ConfigurationTests {
    @Test func operatorVariables() throws {
        let defaults = try AerieConfiguration.fromEnvironment([:])
        #expect(defaults.operations.metricsListen == AerieConfiguration.Operations.defaultMetricsListen)
        #expect(defaults.operations.logFormat == .text)
        #expect(defaults.delivery.leaseSeconds == 120)

        let set = try AerieConfiguration.fromEnvironment([
            "AERIE_METRICS_LISTEN": "[::1]:9100", "AERIE_LOG_FORMAT": "JSON", "AERIE_DELIVERY_LEASE_SECONDS": "30",
        ])
        #expect(set.operations.metricsListen == AerieConfiguration.ListenAddress(host: "::1", port: 9100))
        #expect(set.operations.logFormat == .json)
        #expect(set.delivery.leaseSeconds == 30)
        #expect(try AerieConfiguration.fromEnvironment(["AERIE_METRICS_LISTEN": "off"]).operations.metricsListen == nil)
        // A configuration made in code (tests, embedders) opens no operator port unless asked.
        #expect(AerieConfiguration().operations.metricsListen == nil)

        for (variable, value) in [
            ("AERIE_METRICS_LISTEN", "7402"), ("AERIE_LOG_FORMAT", "xml"), ("AERIE_DELIVERY_LEASE_SECONDS", "1"),
            ("AERIE_TLS_CA_FILE", "/nonexistent/ca.pem"),
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
        let listed = AerieConfiguration.environmentVariableNames
        #expect(listed.count > 40)
        for variable in listed {
            #expect(example.contains("\(variable)="), "deploy/aerie.env.example does not mention \(variable)")
            #expect(AerieConfiguration.environmentHelp.contains("  \(variable) "), "--help does not list \(variable)")
        }
    }

    /// `--help` shows the defaults a configuration actually starts with: they are read from the
    /// properties, so the help cannot drift from the code (the webhook variables were once read
    /// but missing from it).
    @Test func helpShowsTheDefaultsInForce() throws {
        let help = AerieConfiguration.environmentHelp
        let defaults = try AerieConfiguration.fromEnvironment([:])
        func line(_ variable: String) -> String? {
            help.split(separator: "\n").first { $0.hasPrefix("  \(variable) ") }.map(String.init)
        }
        #expect(line("AERIE_DB_POOL_SIZE")?.hasSuffix("(\(defaults.database.poolSize))") == true)
        #expect(line("AERIE_RPC_LISTEN")?.hasSuffix("(127.0.0.1:\(defaults.rpc.port))") == true)
        #expect(line("AERIE_RPC_MAX_LINE_BYTES")?.hasSuffix("(\(defaults.rpc.maxLineBytes))") == true)
        #expect(line("AERIE_DIDCOMM_HEADER_TIMEOUT")?.hasSuffix("(\(defaults.didcomm.limits.headerTimeout.components.seconds))") == true)
        #expect(line("AERIE_WEBHOOK_BACKOFF_MS")?.hasSuffix("(2000)") == true)
        #expect(line("AERIE_METRICS_LISTEN")?.hasSuffix("(127.0.0.1:7402)") == true)
        #expect(line("AERIE_HOME")?.hasSuffix("(./.aerie)") == true)
        #expect(line("AERIE_MESSAGE_RETENTION_DAYS")?.hasSuffix("(unlimited)") == true)
        #expect(line("AERIE_DATABASE_URL")?.hasSuffix(")") == false)

        // Every numeric variable (its default a number) refuses a value out of range, naming itself.
        var numeric = 0
        for variable in AerieConfiguration.environmentVariableNames {
            guard let helpLine = line(variable), helpLine.hasSuffix(")"),
                let open = helpLine.lastIndex(of: "("), Int(helpLine[helpLine.index(after: open)...].dropLast()) != nil
            else { continue }
            numeric += 1
            #expect {
                _ = try AerieConfiguration.fromEnvironment([variable: "-99999999999999999999"])
            } throws: { error in
                "\(error)".contains(variable)
            }
        }
        #expect(numeric > 30)
    }

    @Test func everyVariableSetsWhatItNames() throws {
        let set = try AerieConfiguration.fromEnvironment([
            "AERIE_WEBHOOK_BACKOFF_MS": "250", "AERIE_WEBHOOK_ALLOW_HTTP": "1", "AERIE_DIDCOMM_BODY_TIMEOUT": "7",
            "AERIE_RPC_MAX_BATCH": "5", "AERIE_MAILBOX_MAX_BYTES": "0", "AERIE_SEALING_SWEEP_SECONDS": "0",
            "AERIE_DB_POOL_TENANT_SHARE": "3", "AERIE_PLUGINS": "connections, delete", "AERIE_HOME": "/var/lib/aerie",
        ])
        #expect(set.webhooks.backoff == .milliseconds(250))
        #expect(set.webhooks.allowHTTP)
        #expect(set.didcomm.limits.bodyTimeout == .seconds(7))
        #expect(set.rpc.maxBatchEntries == 5)
        #expect(set.database.quotas.mailboxBytes == 0)
        #expect(set.secrets.sealingSweepInterval == nil)
        #expect(set.database.tenantShare == 3)
        #expect(set.plugins == ["connections", "delete"])
        #expect(set.home.path == "/var/lib/aerie")
        #expect {
            _ = try AerieConfiguration.fromEnvironment(["AERIE_OWNER_DATABASE_URL": "host=/tmp"])
        } throws: { error in
            "\(error)".contains("AERIE_OWNER_DATABASE_URL is set but AERIE_DATABASE_URL is not")
        }
        // Refused while reading the environment, before the server starts a database for it.
        #expect {
            _ = try AerieConfiguration.fromEnvironment(["AERIE_PLUGINS": "delete"])
        } throws: { error in
            "\(error)".contains("'delete', which is built on 'connections': add 'connections'")
        }
        #expect {
            _ = try AerieConfiguration.fromEnvironment(["AERIE_WEBHOOK_ALLOW_HTTP": "yes"])
        } throws: { error in
            "\(error)".contains("AERIE_WEBHOOK_ALLOW_HTTP must be 0 or 1")
        }
    }
}
