import Synchronization

/// Metric handles by their dimension values, each made once and kept: making one per recording
/// (`Counter(label:dimensions:)`) builds the dimensions and looks the metric up in the backend's
/// registry under its lock every time. Only for dimension values from a fixed set (method names
/// the router knows, error codes, outcomes), since every combination is kept.
///
/// Handles bind to the metrics backend when made: make the cache before recording, after
/// `MetricsSystem.bootstrap` (each owner keeps its own instance, so a process that bootstraps
/// late gets live handles from the next owner it builds).
package final class MetricHandles<Handle: Sendable>: Sendable {
    private let handles = Mutex<[[String]: Handle]>([:])
    private let make: @Sendable ([String]) -> Handle

    package init(_ make: @escaping @Sendable (_ values: [String]) -> Handle) {
        self.make = make
    }

    /// The handle for these dimension values, made on first use.
    package func callAsFunction(_ values: String...) -> Handle {
        if let kept = handles.withLock({ $0[values] }) { return kept }
        let made = make(values)
        return handles.withLock { handles in
            if let kept = handles[values] { return kept }
            handles[values] = made
            return made
        }
    }
}
