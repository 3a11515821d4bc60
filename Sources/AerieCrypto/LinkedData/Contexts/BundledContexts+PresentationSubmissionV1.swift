// The JSON-LD context https://identity.foundation/presentation-exchange/submission/v1
// Copied from acapy-agent 1.2.7 vc/ld_proofs/resources/dif-presentation-exchange-submission-v1.jsonld.
// Licence: Apache License 2.0, as the Decentralized Identity Foundation publishes it (https://www.apache.org/licenses/LICENSE-2.0).

extension BundledContexts {
    static let presentationSubmissionV1 = (
        url: "https://identity.foundation/presentation-exchange/submission/v1",
        text: #"""
{
  "@context": {
    "@version": 1.1,
    "PresentationSubmission": {
      "@id": "https://identity.foundation/presentation-exchange/#presentation-submission",
      "@context": {
        "@version": 1.1,
        "presentation_submission": {
          "@id": "https://identity.foundation/presentation-exchange/#presentation-submission",
          "@type": "@json"
        }
      }
    }
  }
}
"""#
    )
}
