/// RDF Dataset Canonicalization (URDNA2015, which RDFC-1.0 standardised with the same output).
public enum RDFCanonicalization {
    /// The canonical N-Quads of a dataset: blank nodes relabelled `_:c14n0`, `_:c14n1`… and lines
    /// sorted. Blank-node work is bounded by `limits.maxCanonicalizationWork` (poison graphs
    /// fail with `limit_exceeded` instead of running for hours).
    public static func urdna2015(_ dataset: RDFDataset, limits: LinkedDataLimits = .default) throws -> String {
        throw CryptoError(.invalidJSONLD, "URDNA2015 is not implemented yet")
    }
}
