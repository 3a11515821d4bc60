extension JSONValue {
    /// The dotted path (as `DecodingError.fieldPath` writes it, e.g. `messages[0].uids`) of the
    /// first string or object key holding U+0000, which PostgreSQL cannot store in text or jsonb;
    /// nil when there is none. A NUL in the value itself (not in a member) is reported as `root`.
    public func pathOfNulCharacter(root: String = "params") -> String? {
        nulAtTop ? root : nulPath(under: nil)
    }

    private var nulAtTop: Bool {
        if case .string(let text) = self { return text.utf8.contains(0) }
        return false
    }

    /// `prefix` is the path so far, nil at the top.
    private func nulPath(under prefix: String?) -> String? {
        switch self {
        case .string:
            return nil  // reported by the container (or `nulAtTop`)
        case .array(let items):
            for (index, item) in items.enumerated() {
                let path = "\(prefix ?? "")[\(index)]"
                if case .string(let text) = item, text.utf8.contains(0) { return path }
                if let found = item.nulPath(under: path) { return found }
            }
            return nil
        case .object(let fields):
            for key in fields.keys.sorted() {
                let path = prefix.map { "\($0).\(key)" } ?? key
                if key.utf8.contains(0) { return path }
                let item = fields[key]!
                if case .string(let text) = item, text.utf8.contains(0) { return path }
                if let found = item.nulPath(under: path) { return found }
            }
            return nil
        case .null, .bool, .int, .double:
            return nil
        }
    }
}
