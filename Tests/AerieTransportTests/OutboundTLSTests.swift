import AerieCore
import AerieTesting
import AerieTransport
import Foundation
import Logging
import Testing

/// Outbound HTTPS against a real TLS server on loopback (Python's `ssl`, a throwaway test CA):
/// deliveries and URL fetches verify the peer's certificate, against the system's authorities by
/// default and against `trustedCertificates` (`AERIE_TLS_CA_FILE`) when set; a certificate for
/// another name is refused even from a trusted authority.
@Suite(.timeLimit(.minutes(5))) struct OutboundTLSTests {
    static let logger = Logger(label: "test.outbound-tls")

    func withServer(_ name: LoopbackTLSServer.Name = .loopback, _ body: (LoopbackTLSServer) async throws -> Void) async throws {
        let server = try await LoopbackTLSServer.start(name: name)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func delivery(trusting caFile: String?) -> HTTPDelivery {
        HTTPDelivery(configuration: .init(allowPrivateAddresses: true, trustedCertificates: caFile))
    }

    @Test func aDeliveryReachesAServerItsAuthorityVouchesFor() async throws {
        try await withServer { server in
            let http = delivery(trusting: server.caFile)
            let answer = try await http.post(Array("an envelope".utf8), to: server.url)
            await http.shutdown()
            #expect(answer.status == 202)
            #expect(server.posts == 1)
        }
    }

    @Test func aDeliveryRefusesACertificateNoTrustedAuthoritySigned() async throws {
        try await withServer { server in
            let http = delivery(trusting: nil)
            let failure = await #expect(throws: HTTPDelivery.Failure.self) {
                _ = try await http.post(Array("an envelope".utf8), to: server.url)
            }
            await http.shutdown()
            #expect(failure?.message.lowercased().contains("certificate") == true, "\(failure?.message ?? "")")
            #expect(server.posts == 0, "nothing was sent over an unverified connection")
        }
    }

    @Test func aDeliveryRefusesACertificateForAnotherName() async throws {
        try await withServer(.otherName) { server in
            let http = delivery(trusting: server.caFile)
            await #expect(throws: HTTPDelivery.Failure.self) {
                _ = try await http.post(Array("an envelope".utf8), to: server.url)
            }
            await http.shutdown()
            #expect(server.posts == 0)
        }
    }

    @Test func aFetchOverHTTPSVerifiesTheServer() async throws {
        try await withServer { server in
            let trusting = URLResolver(
                configuration: .init(allowPrivateAddresses: true, trustedCertificates: server.caFile), logger: Self.logger)
            let fetched = try await trusting.fetch(URLFetchRequest(url: server.url))
            await trusting.shutdown()
            #expect(fetched.status == 200)
            #expect(String(decoding: fetched.body, as: UTF8.self) == #"{"served":"over tls"}"#)

            let system = URLResolver(configuration: .init(allowPrivateAddresses: true), logger: Self.logger)
            await #expect(throws: URLFetchError.self) { _ = try await system.fetch(URLFetchRequest(url: server.url)) }
            await system.shutdown()
        }
    }
}
