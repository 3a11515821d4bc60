import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An HTTPS server on 127.0.0.1 with a certificate from a throwaway test CA, so outbound HTTPS
/// (deliveries, webhooks, invitation URLs) is tested against a real, independent TLS stack
/// (Python's `ssl` over OpenSSL) rather than a hand-made peer. `openssl` makes the CA and the
/// server's certificate in a private temporary directory; the server answers a POST with 202
/// (counting the POSTs it received) and a GET with a small JSON body. Started and stopped by PID.
public final class LoopbackTLSServer: @unchecked Sendable {
    public enum Name: String, Sendable {
        /// A certificate for 127.0.0.1 and localhost: the name the test connects to.
        case loopback
        /// A certificate for another name, from the same CA: verification must refuse it.
        case otherName
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The test CA's certificate (PEM): what a client must trust.
    public let caFile: String
    public let port: Int
    private let directory: URL
    private let process: Process

    public var url: String { "https://127.0.0.1:\(port)/" }

    /// POSTs received so far.
    public var posts: Int {
        let text = (try? String(contentsOf: directory.appendingPathComponent("posts"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").count
    }

    private init(caFile: String, port: Int, directory: URL, process: Process) {
        self.caFile = caFile
        self.port = port
        self.directory = directory
        self.process = process
    }

    public static func start(name: Name = .loopback) async throws -> LoopbackTLSServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aerie-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory.path
        let subjectName = name == .loopback ? "subjectAltName=IP:127.0.0.1,DNS:localhost" : "subjectAltName=DNS:other.invalid"
        let commands: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
             "-subj", "/CN=Aerie test CA", "-keyout", "\(path)/ca.key", "-out", "\(path)/ca.pem"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=aerie test server",
             "-keyout", "\(path)/server.key", "-out", "\(path)/server.csr"],
            ["x509", "-req", "-in", "\(path)/server.csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "\(path)/ext", "-out", "\(path)/server.pem"],
        ]
        try Data(subjectName.utf8).write(to: directory.appendingPathComponent("ext"))
        for arguments in commands { try await run("/usr/bin/openssl", arguments) }

        let script = """
            import http.server, ssl, sys
            directory = sys.argv[1]
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def do_POST(self):
                    length = min(int(self.headers.get("Content-Length", "0")), 1 << 20)
                    self.rfile.read(length)
                    with open(directory + "/posts", "a") as posts:
                        posts.write("%d\\n" % length)
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                def do_GET(self):
                    body = b'{"served":"over tls"}'
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args):
                    pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(directory + "/server.pem", directory + "/server.key")
            server.socket = context.wrap_socket(server.socket, server_side=True)
            with open(directory + "/port.tmp", "w") as port:
                port.write(str(server.server_address[1]))
            import os
            os.rename(directory + "/port.tmp", directory + "/port")
            server.serve_forever()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let portFile = directory.appendingPathComponent("port")
        for _ in 0..<500 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let port = Int(text) {
                return LoopbackTLSServer(caFile: "\(path)/ca.pem", port: port, directory: directory, process: process)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { process.terminate() }
        throw Failure(description: "the TLS test server did not start within 10 s")
    }

    /// Ends the server (by its PID) and removes its keys.
    public func stop() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let process = self.process
        _ = await offPool { process.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let output = await offPool { errors.fileHandleForReading.readDataToEndOfFile() }
        _ = await offPool { process.waitUntilExit() }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.first ?? "") failed: \(String(decoding: output.prefix(2000), as: UTF8.self))")
        }
    }
}
