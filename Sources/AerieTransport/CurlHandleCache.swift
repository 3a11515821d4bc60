import Synchronization

/// Easy handles kept between transfers, so that the connections they leave open (HTTP
/// keep-alive) and their DNS cache serve the next transfer to the same peer instead of a new
/// handle, a new TCP connection and a teardown per POST.
///
/// A handle belongs to one transfer at a time: taken before it, reset and given back after it.
/// A reset handle keeps only libcurl's connection and DNS caches, never a transfer's options,
/// callbacks, headers or body. Connections are reused only for the same scheme, host and port;
/// every new one still goes through the address policy (`CURLOPT_OPENSOCKETFUNCTION`).
final class CurlHandleCache: Sendable {
    /// A handle between two transfers: nothing else holds it, so it may cross threads.
    private struct Idle: @unchecked Sendable {
        let easy: CurlEasy
    }

    private let idle = Mutex<[Idle]>([])
    private let capacity: Int

    /// Keeps at most `capacity` idle handles (one per thread that runs transfers is enough).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// An idle handle, or a new one.
    func take() throws -> CurlEasy {
        if let kept = idle.withLock({ $0.popLast() }) { return kept.easy }
        return try CurlEasy()
    }

    /// Returns `easy` after its transfer; its options are reset here. Beyond the capacity the
    /// handle is freed (its connections closed).
    func giveBack(_ easy: CurlEasy) {
        easy.reset()
        let kept = Idle(easy: easy)
        let overflow: Idle? = idle.withLock { handles in
            guard handles.count < capacity else { return kept }
            handles.append(kept)
            return nil
        }
        _ = overflow  // freed here, outside the lock
    }
}
