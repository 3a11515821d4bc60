import AerieCore
import CCurl

/// One libcurl easy handle. Used by one thread at a time (a pool thread running a blocking
/// transfer); never crosses an `await`.
final class CurlEasy {
    /// `curl_global_init` must run once before any handle exists and is not thread-safe:
    /// a `static let` gives exactly that.
    private static let globalInit: CURLcode = curl_global_init(3)  // CURL_GLOBAL_ALL (SSL | WIN32)

    let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?

    init() throws {
        guard Self.globalInit == CURLE_OK, let handle = curl_easy_init() else {
            throw URLFetchErrorBox.internal("libcurl could not be initialised")
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headers { curl_slist_free_all(headers) }
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try check(aerie_curl_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws {
        try set(option, value ? 1 : 0)
    }

    /// libcurl copies string options, so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws {
        try check(aerie_curl_setopt_string(handle, option, value), option)
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws {
        try check(aerie_curl_setopt_pointer(handle, option, pointer), option)
    }

    func set(_ option: CURLoption, largeValue: Int64) throws {
        try check(aerie_curl_setopt_off_t(handle, option, curl_off_t(largeValue)), option)
    }

    /// Replaces the request headers; the list lives as long as the handle.
    func setHeaders(_ lines: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw URLFetchErrorBox.internal("out of memory building headers")
            }
            list = appended
        }
        try check(aerie_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)
        if let headers { curl_slist_free_all(headers) }
        headers = list
    }

    func perform() -> CURLcode { curl_easy_perform(handle) }

    /// Clears every option (pointers into a finished transfer included) and the request headers;
    /// libcurl keeps the handle's live connections and DNS cache for the next transfer.
    func reset() {
        curl_easy_reset(handle)
        if let headers { curl_slist_free_all(headers) }
        headers = nil
    }

    func info(long info: CURLINFO) -> Int? {
        var value = 0
        guard aerie_curl_getinfo_long(handle, info, &value) == CURLE_OK else { return nil }
        return value
    }

    func info(string info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard aerie_curl_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    func info(offT info: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        guard aerie_curl_getinfo_off_t(handle, info, &value) == CURLE_OK else { return nil }
        return Int64(value)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code == CURLE_OK else {
            throw URLFetchErrorBox.internal("curl_easy_setopt(\(option.rawValue)): \(Self.describe(code))")
        }
    }

    static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}

/// Internal failures of the curl layer, surfaced as `URLFetchError` without leaking details.
enum URLFetchErrorBox {
    static func `internal`(_ details: String) -> URLFetchError {
        URLFetchError(.unreachable, "the URL could not be fetched", details: details)
    }
}
