import AerieClient
import AerieCore
import AerieStore
import AerieTesting
import Foundation
import Testing

@Suite(.timeLimit(.minutes(10))) struct TenantAdminTests {
    @Test func createListGetAndPaging() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            var ids: [String] = []
            for index in 0..<5 {
                let created = try await admin.call("admin.tenants.create", params: ["label": .string("tenant \(index)")])
                let token = try #require(created["token"]?.stringValue)
                #expect(token.hasPrefix("aerie_t_"))
                #expect(token.utf8.count >= 40)  // >= 32 random bytes, base64url
                ids.append(try #require(created["tenantId"]?.stringValue))
            }
            var listed: [String] = []
            var labels: [String: String] = [:]
            var cursor: JSONValue = .null
            var pages = 0
            repeat {
                pages += 1
                var params: [String: JSONValue] = ["limit": 2]
                if cursor != .null { params["cursor"] = cursor }
                let page = try await admin.call("admin.tenants.list", params: .object(params))
                guard case .array(let items)? = page["items"] else { Issue.record("no items"); return }
                #expect(items.count <= 2)
                listed += items.compactMap { $0["tenantId"]?.stringValue }
                for item in items { labels[item["tenantId"]?.stringValue ?? ""] = item["label"]?.stringValue }
                cursor = page["nextCursor"] ?? .null
            } while cursor != .null && pages <= ids.count  // bounded: a cursor that never advances fails below
            #expect(listed.sorted() == ids.sorted())
            #expect(listed == listed.sorted())
            // Each label opened with its own tenant's data key; none is stored in clear.
            #expect(labels == Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, "tenant \($0)") }))
            let clear = try await WalletFixture.asSuperuser(server.database) { session in
                try session.query("SELECT count(*) FROM aerie.tenants WHERE label IS NOT NULL OR label_sealed IS NULL").int(0, 0)
            }
            #expect(clear == 0)
            // A tenant whose data key this server cannot unwrap is listed without its label; the
            // listing and the other labels are unaffected.
            let unopenable = ids[1]
            _ = try await WalletFixture.asSuperuser(server.database) { session in
                try session.execute(
                    "UPDATE aerie.tenants SET data_key_wrapped = $2 WHERE id = $1::uuid", [.text(unopenable), .bytes([UInt8](repeating: 7, count: 72))])
            }
            let all = try await admin.call("admin.tenants.list", params: ["limit": 10])["items"]?.arrayValue ?? []
            #expect(all.count == ids.count)
            #expect(all.first { $0["tenantId"]?.stringValue == ids[1] }?["label"] == nil)
            #expect(all.first { $0["tenantId"]?.stringValue == ids[0] }?["label"] == "tenant 0")

            let shown = try await admin.call("admin.tenants.get", params: ["tenantId": .string(ids[0])])
            #expect(shown["label"] == "tenant 0")
            #expect(shown["status"] == "active")
            #expect(shown["token"] == nil)
            // Times are ISO 8601 text, as everywhere else (not seconds since 2001).
            let created = try #require(shown["createdAt"]?.stringValue)
            let parsed = try #require(ISO8601DateFormatter().date(from: created), "createdAt \(created)")
            #expect(abs(parsed.timeIntervalSinceNow) < 600)

            await expectCode("not_found") { try await admin.call("admin.tenants.get", params: ["tenantId": .string(UUID().uuidString)]) }
            await expectCode("invalid_params") { try await admin.call("admin.tenants.get", params: ["tenantId": "nope"]) }
            await expectCode("invalid_params") { try await admin.call("admin.tenants.create", params: ["label": ""]) }
            await expectCode("invalid_params") { try await admin.call("admin.tenants.create", params: [:]) }
        }
    }

    @Test func deleteRemovesEveryTenantRowAndSparesTheOther() async throws {
        try await LiveServer.with { server in
            let admin = try await server.adminClient()
            defer { Task { await admin.close() } }
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, _) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            for key in ["a", "b", "c"] { _ = try await alice.call("settings.set", params: ["key": .string(key), "value": 1]) }
            _ = try await bob.call("settings.set", params: ["key": "a", "value": "bob's"])

            let deleted = try await admin.call("admin.tenants.delete", params: ["tenantId": .string(aliceID.rawValue)])
            #expect(deleted["rowsRemoved"]?["tenant_settings"] == 3)
            await expectCode("not_found") { try await admin.call("admin.tenants.delete", params: ["tenantId": .string(aliceID.rawValue)]) }
            #expect(try await bob.call("settings.get", params: ["key": "a"])["value"] == "bob's")
        }
    }
}

@Suite(.timeLimit(.minutes(10))) struct TenantIsolationOverRPCTests {
    @Test func twoTenantsNeverSeeEachOthersSettings() async throws {
        try await LiveServer.with(extraPlugins: [ProbePlugin()]) { server in
            let (alice, aliceID) = try await server.tenantClient(label: "alice")
            let (bob, bobID) = try await server.tenantClient(label: "bob")
            defer { Task { await alice.close(); await bob.close() } }
            #expect(try await alice.call("probe.whoami") == .string(aliceID.rawValue))
            #expect(try await bob.call("probe.whoami") == .string(bobID.rawValue))

            _ = try await alice.call("settings.set", params: ["key": "secret", "value": "alice-only"])
            await expectCode("not_found") { try await bob.call("settings.get", params: ["key": "secret"]) }
            #expect(try await bob.call("settings.list")["items"] == [])
            await expectCode("not_found") { try await bob.call("settings.remove", params: ["key": "secret"]) }
            _ = try await bob.call("settings.set", params: ["key": "secret", "value": "bob-only"])
            #expect(try await alice.call("settings.get", params: ["key": "secret"])["value"] == "alice-only")
            #expect(try await bob.call("settings.get", params: ["key": "secret"])["value"] == "bob-only")
        }
    }
}
