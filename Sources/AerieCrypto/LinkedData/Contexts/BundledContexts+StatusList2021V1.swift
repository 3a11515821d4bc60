// The JSON-LD context https://w3id.org/vc/status-list/2021/v1
// Copied from acapy-agent 1.2.7 vc/ld_proofs/resources/status_list_context.jsonld.
// Licence: W3C Software and Document License, as the W3C-CCG publishes its documents (https://www.w3.org/copyright/software-license-2023/).

extension BundledContexts {
    static let statusList2021V1 = (
        url: "https://w3id.org/vc/status-list/2021/v1",
        text: #"""
{
  "@context": {
    "@protected": true,

    "StatusList2021Credential": {
      "@id":
        "https://w3id.org/vc/status-list#StatusList2021Credential",
      "@context": {
        "@protected": true,

        "id": "@id",
        "type": "@type",

        "description": "http://schema.org/description",
        "name": "http://schema.org/name"
      }
    },

    "StatusList2021": {
      "@id":
        "https://w3id.org/vc/status-list#StatusList2021",
      "@context": {
        "@protected": true,

        "id": "@id",
        "type": "@type",

        "statusPurpose":
          "https://w3id.org/vc/status-list#statusPurpose",
        "encodedList": "https://w3id.org/vc/status-list#encodedList"
      }
    },

    "StatusList2021Entry": {
      "@id":
        "https://w3id.org/vc/status-list#StatusList2021Entry",
      "@context": {
        "@protected": true,

        "id": "@id",
        "type": "@type",

        "statusPurpose":
          "https://w3id.org/vc/status-list#statusPurpose",
        "statusListIndex":
          "https://w3id.org/vc/status-list#statusListIndex",
        "statusListCredential": {
          "@id":
            "https://w3id.org/vc/status-list#statusListCredential",
          "@type": "@id"
        }
      }
    }
  }
}
"""#
    )
}
