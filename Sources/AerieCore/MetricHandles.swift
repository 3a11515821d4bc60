import Synchronization

/// Metric handles by their dimension values, each made once and kept: making one per recording
/// (`Counter(label:dimensions:)`) builds the dimensions and looks the metric up in the backend's
/// registry under its lock every time. Only for dimension values from a fixed set (method names
/// the router knows, error codes, outcomes), since every combination is kept.
///
/// Handles bind to the metrics backend when made: make the cache before recording, after
/// `MetricsSystem.bootstrap` (each owner keeps its own instance, so a process that bootstraps
/// late gets live handles from the next owner it builds).
///
/// The handles (swift-metrics' `Counter`, `Timer`: classes) are kept as `AnyObject`, so the
/// dictionary's type does not depend on `Handle`: this generic class is not specialized in the
/// modules that use it, and a `[[String]: Handle]` made every recording look up the dictionary's
/// metadata at run time.
package final class MetricHandles<Handle: AnyObject & Sendable>: Sendable {
    private let handles = Mutex<[[String]: AnyObject]>([:])
    private let make: @Sendable ([String]) -> Handle

    package init(_ make: @escaping @Sendable (_ values: [String]) -> Handle) {
        self.make = make
    }

    /// The handle for these dimension values, made on first use.
    package func callAsFunction(_ values: String...) -> Handle {
        // Only `make`'s handles are stored, so each one is a `Handle`.
        if let kept = handles.withLock({ $0[values] }) { return unsafeDowncast(kept, to: Handle.self) }
        let made = make(values)
        return handles.withLock { handles in
            if let kept = handles[values] { return unsafeDowncast(kept, to: Handle.self) }
            handles[values] = made
            return made
        }
    }
}
