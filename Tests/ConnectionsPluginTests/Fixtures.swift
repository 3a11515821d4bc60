import AerieCore

/// Invitation samples: the seeds' own (copied verbatim, comments removed) and ones ACA-Py 1.2.7
/// generated (`ConnectionInvitation` / `InvitationMessage` `.serialize()` and `.to_url()`).
enum Fixtures {
    /// Seed 000: proprietary standard invitation.
    static let proprietaryStandard = #"""
{
    "id": "NjAzNTY",
    "statusCode": "MS-101",
    "connReqId": "bbb934b7-409f-4540-b73e-1aedd0c464cb",
    "senderDetail": {
        "name": "DEMO-Faber College",
        "agentKeyDlgProof": {
            "agentDID": "UM7V793qNjassDjxna4DYF",
            "agentDelegatedKey": "FuV81qMvyyAo7JfAys8mt24EhvSujp7JQ1d2B4bsFPNx",
            "signature": "AiffsYxXcvoWsWsHmG2kX0iyOKd0X1gTRvom9R7hEIfDU2F5lWLDMSgGabF/We7ToldpjN+GafBivS8G8cStDQ=="
        },
        "DID": "QkYx5d2ZkRxrKu4ZF9XVch",
        "logoUrl": "https://s3.us-east-2.amazonaws.com/public-demo-artifacts/demo-icons/cbFaber.png",
        "verKey": "Dwp6hVe91vSQbuk49QeihmLZ7JWXognfAWwYW77eRrNz",
        "publicDID": "AVYNnUaVRb261zXkYCrxHz"
    },
    "senderAgencyDetail": {
        "DID": "5YKgVzinHVv5XfudLv5F4k",
        "verKey": "3UX8ZEkpg6ZGPiqdTWdPm5c63z5XotrD7vSKp8DLE9iu",
        "endpoint": "eas.evernym.com:80/agency/msg"
    },
    "targetName": "there",
    "statusMsg": "message created",
    "threadId": null
}
"""#

    /// Seed 000: proprietary abbreviated invitation.
    static let proprietaryAbbreviated = #"""
{
    "id": "bbb934b7-409f-4540-b73e-1aedd0c464cb",
    "s": {
        "d": "QkYx5d2ZkRxrKu4ZF9XVch",
        "dp": {
            "d": "UM7V793qNjassDjxna4DYF",
            "k": "FuV81qMvyyAo7JfAys8mt24EhvSujp7JQ1d2B4bsFPNx",
            "s": "AiffsYxXcvoWsWsHmG2kX0iyOKd0X1gTRvom9R7hEIfDU2F5lWLDMSgGabF/We7ToldpjN+GafBivS8G8cStDQ=="
        },
        "l": "https://s3.us-east-2.amazonaws.com/public-demo-artifacts/demo-icons/cbFaber.png",
        "n": "DEMO-Faber College",
        "publicDID": "AVYNnUaVRb261zXkYCrxHz",
        "v": "Dwp6hVe91vSQbuk49QeihmLZ7JWXognfAWwYW77eRrNz"
    },
    "sa": {
        "d": "5YKgVzinHVv5XfudLv5F4k",
        "e": "eas.evernym.com:80/agency/msg",
        "v": "3UX8ZEkpg6ZGPiqdTWdPm5c63z5XotrD7vSKp8DLE9iu"
    },
    "sc": "MS-101",
    "sm": "message created",
    "t": "there",
    "threadId": null
}
"""#

    /// Seed 000: Aries invitation (did:sov prefix).
    static let ariesSeed000 = #"""
{
    "label": "Acme",
    "serviceEndpoint": "http://vas.evernym.com:80/agency/msg",
    "recipientKeys": [
        "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"
    ],
    "routingKeys": [
        "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
        "3mo3P6XzDzBvuktCgDQarACzzeV7zxrSExnicpuH7t83"
    ],
    "profileUrl": "https://s3.us-east-2.amazonaws.com/public-demo-artifacts/demo-icons/cbACME.png",
    "@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/connections/1.0/invitation",
    "@id": "467f6449-7d1f-4a9f-ada7-09d6444af083"
}
"""#

    /// Seed 000: out-of-band with `request~attach` and a DID `service`.
    static let outOfBandSeed000 = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.0/invitation",
  "@id": "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
  "label": "Faber College",
  "goal_code": "issue-vc",
  "goal": "To issue a Faber College Graduate credential",
  "handshake_protocols": [
      "https://didcomm.org/didexchange/1.0",
      "https://didcomm.org/connections/1.0"
      ],
  "request~attach": [
    {
        "@id": "request-0",
        "mime-type": "application/json",
        "data": {
            "json": "<json of protocol message>"
        }
    }
  ],
  "service": ["did:sov:LjgpST2rjsoxYegQDRm7EL"]
}
"""#

    /// Seed 001/003: out-of-band with an inline `service`, as printed (its trailing comma makes it invalid JSON).
    static let outOfBandSeed001WithTrailingComma = #"""
{
    "@type": "https://didcomm.org/out-of-band/1.0/invitation",
    "@id": "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
    "label": "Faber College",
    "goal_code": "issue-vc",
    "goal": "To issue a Faber College Graduate credential",
    "handshake_protocols": [
        "https://didcomm.org/didexchange/1.0",
        "https://didcomm.org/connections/1.0"
    ],
    "request~attach": [
      {
          "@id": "request-0",
          "mime-type": "application/json",
          "data": {
              "json": "<json of protocol message>"
          }
      }
    ],
    "service": [
        {
            "id": "#inline",
            "type": "did-communication",
            "serviceEndpoint": "http://vas.evernym.com:80/agency/msg",
            "recipientKeys": [
                "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"
            ],
            "routingKeys": [
                "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
                "3mo3P6XzDzBvuktCgDQarACzzeV7zxrSExnicpuH7t83"
            ]
        },
    ]
}
"""#

    /// Seed 001/003: the same, trailing comma removed.
    static let outOfBandSeed001 = #"""
{
    "@type": "https://didcomm.org/out-of-band/1.0/invitation",
    "@id": "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
    "label": "Faber College",
    "goal_code": "issue-vc",
    "goal": "To issue a Faber College Graduate credential",
    "handshake_protocols": [
        "https://didcomm.org/didexchange/1.0",
        "https://didcomm.org/connections/1.0"
    ],
    "request~attach": [
      {
          "@id": "request-0",
          "mime-type": "application/json",
          "data": {
              "json": "<json of protocol message>"
          }
      }
    ],
    "service": [
        {
            "id": "#inline",
            "type": "did-communication",
            "serviceEndpoint": "http://vas.evernym.com:80/agency/msg",
            "recipientKeys": [
                "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"
            ],
            "routingKeys": [
                "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj",
                "3mo3P6XzDzBvuktCgDQarACzzeV7zxrSExnicpuH7t83"
            ]
        }
    ]
}
"""#

    /// Seed 003: an Aries invitation URL (`?c_i=`, padded base64).
    static let ariesURLSeed003 = "http://vas.evernym.com:80/agency/msg?c_i=eyJsYWJlbCI6IkFjbWUiLCJzZXJ2aWNlRW5kcG9pbnQiOiJodHRwOi8vdmFzLmV2ZXJueW0uY29tOjgwL2FnZW5jeS9tc2ciLCJyZWNpcGllbnRLZXlzIjpbIjNhVkhWZEFxZnBKSmVROG1mdm5UV0Y0MVpoYUxidVVLQXJ3UlVCRldlWjNRIl0sInJvdXRpbmdLZXlzIjpbIjNhVkhWZEFxZnBKSmVROG1mdm5UV0Y0MVpoYUxidVVLQXJ3UlVCRldlWjNRIiwiM21vM1A2WHpEekJ2dWt0Q2dEUWFyQUN6emVWN3p4clNFeG5pY3B1SDd0ODMiXSwicHJvZmlsZVVybCI6Imh0dHBzOi8vczMudXMtZWFzdC0yLmFtYXpvbmF3cy5jb20vcHVibGljLWRlbW8tYXJ0aWZhY3RzL2RlbW8taWNvbnMvY2JBQ01FLnBuZyIsIkB0eXBlIjoiZGlkOnNvdjpCekNic05ZaE1yakhpcVpEVFVBU0hnO3NwZWMvY29ubmVjdGlvbnMvMS4wL2ludml0YXRpb24iLCJAaWQiOiI4YWE1ZTZjOS1mZjZkLTQ0NDUtOWU1Ni1iNDU1MjQxZTVlZGIifQ=="

    /// Seed 003: an out-of-band invitation URL (`?oob=`, unpadded).
    static let outOfBandURLSeed003 = "http://vas.evernym.com:80/agency/msg?oob=eyJAdHlwZSI6Imh0dHBzOi8vZGlkY29tbS5vcmcvb3V0LW9mLWJhbmQvMS4wL2ludml0YXRpb24iLCJAaWQiOiI2OTIxMmEzYS1kMDY4LTRmOWQtYTJkZC00NzQxYmNhODlhZjMiLCJsYWJlbCI6IkZhYmVyIENvbGxlZ2UiLCAiZ29hbF9jb2RlIjoiaXNzdWUtdmMiLCJnb2FsIjoiVG8gaXNzdWUgYSBGYWJlciBDb2xsZWdlIEdyYWR1YXRlIGNyZWRlbnRpYWwiLCJoYW5kc2hha2VfcHJvdG9jb2xzIjpbImh0dHBzOi8vZGlkY29tbS5vcmcvZGlkZXhjaGFuZ2UvMS4wIiwiaHR0cHM6Ly9kaWRjb21tLm9yZy9jb25uZWN0aW9ucy8xLjAiXSwic2VydmljZSI6WyJkaWQ6c292OkxqZ3BTVDJyanNveFllZ1FEUm03RUwiXX0"

    /// Seed 003: a short URL, to be resolved over HTTP.
    static let shortURLSeed003 = "https://vty.im/cnf4m"

    /// ACA-Py: connections/1.0 invitation with keys, routing key and imageUrl.
    static let acapyCi = #"""
{
  "@type": "https://didcomm.org/connections/1.0/invitation",
  "@id": "3b1b2b6a-4f1e-4a7a-9b6e-0b9a8d0f5c11",
  "label": "ACA-Py Faber",
  "recipientKeys": [
    "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"
  ],
  "serviceEndpoint": "https://faber.example.org/didcomm",
  "routingKeys": [
    "3mo3P6XzDzBvuktCgDQarACzzeV7zxrSExnicpuH7t83"
  ],
  "imageUrl": "https://faber.example.org/logo.png"
}
"""#

    /// ACA-Py: connections/1.0 public-DID invitation.
    static let acapyCiPublic = #"""
{
  "@type": "https://didcomm.org/connections/1.0/invitation",
  "@id": "c0ffee00-0000-4000-8000-000000000001",
  "label": "Public Faber",
  "did": "did:sov:LjgpST2rjsoxYegQDRm7EL"
}
"""#

    /// ACA-Py: out-of-band 1.1 with an inline service of did:key references.
    static let acapyOob11 = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.1/invitation",
  "@id": "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
  "label": "Faber OOB",
  "handshake_protocols": [
    "https://didcomm.org/didexchange/1.1",
    "https://didcomm.org/connections/1.0"
  ],
  "accept": [
    "didcomm/aip1",
    "didcomm/aip2;env=rfc19"
  ],
  "services": [
    {
      "id": "#inline",
      "type": "did-communication",
      "recipientKeys": [
        "did:key:z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7#z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"
      ],
      "routingKeys": [
        "did:key:z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR#z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR"
      ],
      "serviceEndpoint": "https://faber.example.org/didcomm"
    }
  ],
  "goal_code": "issue-vc",
  "goal": "To issue a credential"
}
"""#

    /// ACA-Py: out-of-band 1.0 with a public DID service.
    static let acapyOob10Public = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.0/invitation",
  "@id": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
  "label": "Public OOB",
  "handshake_protocols": [
    "https://didcomm.org/didexchange/1.0"
  ],
  "services": [
    "did:sov:LjgpST2rjsoxYegQDRm7EL"
  ]
}
"""#

    /// ACA-Py: out-of-band 1.1, `requests~attach` (json) and no handshake.
    static let acapyOobAttach = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.1/invitation",
  "@id": "11111111-2222-4333-8444-555555555555",
  "label": "Attach OOB",
  "handshake_protocols": [],
  "requests~attach": [
    {
      "@id": "request-0",
      "mime-type": "application/json",
      "data": {
        "json": {
          "@type": "https://didcomm.org/present-proof/1.0/request-presentation",
          "@id": "req-1",
          "comment": "proof please"
        }
      }
    }
  ],
  "services": [
    {
      "id": "#inline",
      "type": "did-communication",
      "recipientKeys": [
        "did:key:z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7#z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"
      ],
      "routingKeys": [
        "did:key:z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR#z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR"
      ],
      "serviceEndpoint": "https://faber.example.org/didcomm"
    }
  ]
}
"""#

    /// ACA-Py: out-of-band 1.1 with a did:peer:2 service.
    static let acapyOobPeer = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.1/invitation",
  "@id": "22222222-3333-4444-8555-666666666666",
  "label": "Peer OOB",
  "handshake_protocols": [
    "https://didcomm.org/didexchange/1.1"
  ],
  "services": [
    "did:peer:2.Vz6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7.SeyJpZCI6IiNkaWRjb21tLTAiLCJ0IjoiZGlkLWNvbW11bmljYXRpb24iLCJwcmlvcml0eSI6MCwicmVjaXBpZW50S2V5cyI6WyIja2V5LTEiXSwiciI6WyJkaWQ6a2V5Ono2TWtoRTQ1eUxuUlpYZ1EyRml1TW5OUmhGa3pwRGt5UXI2bnZ5aGVUNnNKMzZ1UiN6Nk1raEU0NXlMblJaWGdRMkZpdU1uTlJoRmt6cERreVFyNm52eWhlVDZzSjM2dVIiXSwicyI6Imh0dHBzOi8vcGVlci5leGFtcGxlLm9yZy9kaWRjb21tIn0"
  ]
}
"""#

    /// ACA-Py: out-of-band 1.1 with a base64 attachment and a handshake.
    static let acapyOobB64attach = #"""
{
  "@type": "https://didcomm.org/out-of-band/1.1/invitation",
  "@id": "33333333-4444-4555-8666-777777777777",
  "label": "B64 attach",
  "handshake_protocols": [
    "https://didcomm.org/connections/1.0"
  ],
  "requests~attach": [
    {
      "@id": "request-0",
      "mime-type": "application/json",
      "data": {
        "base64": "eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL2lzc3VlLWNyZWRlbnRpYWwvMi4wL29mZmVyLWNyZWRlbnRpYWwiLCAiQGlkIjogIm9mZmVyLTEifQ=="
      }
    }
  ],
  "services": [
    {
      "id": "#inline",
      "type": "did-communication",
      "recipientKeys": [
        "did:key:z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7#z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"
      ],
      "routingKeys": [
        "did:key:z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR#z6MkhE45yLnRZXgQ2FiuMnNRhFkzpDkyQr6nvyheT6sJ36uR"
      ],
      "serviceEndpoint": "https://faber.example.org/didcomm"
    }
  ]
}
"""#

    /// ACA-Py `to_url()`: `?c_i=` base64url, unpadded.
    static let acapyCiURL = "https://faber.example.org/didcomm?c_i=eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL2Nvbm5lY3Rpb25zLzEuMC9pbnZpdGF0aW9uIiwgIkBpZCI6ICIzYjFiMmI2YS00ZjFlLTRhN2EtOWI2ZS0wYjlhOGQwZjVjMTEiLCAibGFiZWwiOiAiQUNBLVB5IEZhYmVyIiwgInJlY2lwaWVudEtleXMiOiBbIjlOUjlOWWg1ejVISHU2bkxIblFXWGN6VXFSd3Jkb0w0S0JVV3ZvMmZFNnZqIl0sICJzZXJ2aWNlRW5kcG9pbnQiOiAiaHR0cHM6Ly9mYWJlci5leGFtcGxlLm9yZy9kaWRjb21tIiwgInJvdXRpbmdLZXlzIjogWyIzbW8zUDZYekR6QnZ1a3RDZ0RRYXJBQ3p6ZVY3enhyU0V4bmljcHVIN3Q4MyJdLCAiaW1hZ2VVcmwiOiAiaHR0cHM6Ly9mYWJlci5leGFtcGxlLm9yZy9sb2dvLnBuZyJ9"

    /// ACA-Py `to_url()` with no base: just `?c_i=`.
    static let acapyCiPublicURL = "?c_i=eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL2Nvbm5lY3Rpb25zLzEuMC9pbnZpdGF0aW9uIiwgIkBpZCI6ICJjMGZmZWUwMC0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCAibGFiZWwiOiAiUHVibGljIEZhYmVyIiwgImRpZCI6ICJkaWQ6c292OkxqZ3BTVDJyanNveFllZ1FEUm03RUwifQ"

    /// ACA-Py `to_url()`: `?oob=`.
    static let acapyOob11URL = "https://faber.example.org/didcomm?oob=eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL291dC1vZi1iYW5kLzEuMS9pbnZpdGF0aW9uIiwgIkBpZCI6ICI5ZDhjN2I2YS01ZjRlLTRkM2MtOGIyYS0xZjBlOWQ4YzdiNmEiLCAibGFiZWwiOiAiRmFiZXIgT09CIiwgImhhbmRzaGFrZV9wcm90b2NvbHMiOiBbImh0dHBzOi8vZGlkY29tbS5vcmcvZGlkZXhjaGFuZ2UvMS4xIiwgImh0dHBzOi8vZGlkY29tbS5vcmcvY29ubmVjdGlvbnMvMS4wIl0sICJhY2NlcHQiOiBbImRpZGNvbW0vYWlwMSIsICJkaWRjb21tL2FpcDI7ZW52PXJmYzE5Il0sICJzZXJ2aWNlcyI6IFt7ImlkIjogIiNpbmxpbmUiLCAidHlwZSI6ICJkaWQtY29tbXVuaWNhdGlvbiIsICJyZWNpcGllbnRLZXlzIjogWyJkaWQ6a2V5Ono2TWtucGdCeG53WEtjbW0xYmQyeU1OTU5pWVVmMURpM2dhUjFDUFNtNHpnOUtpNyN6Nk1rbnBnQnhud1hLY21tMWJkMnlNTk1OaVlVZjFEaTNnYVIxQ1BTbTR6ZzlLaTciXSwgInJvdXRpbmdLZXlzIjogWyJkaWQ6a2V5Ono2TWtoRTQ1eUxuUlpYZ1EyRml1TW5OUmhGa3pwRGt5UXI2bnZ5aGVUNnNKMzZ1UiN6Nk1raEU0NXlMblJaWGdRMkZpdU1uTlJoRmt6cERreVFyNm52eWhlVDZzSjM2dVIiXSwgInNlcnZpY2VFbmRwb2ludCI6ICJodHRwczovL2ZhYmVyLmV4YW1wbGUub3JnL2RpZGNvbW0ifV0sICJnb2FsX2NvZGUiOiAiaXNzdWUtdmMiLCAiZ29hbCI6ICJUbyBpc3N1ZSBhIGNyZWRlbnRpYWwifQ"

    /// ACA-Py `to_url()` with no base: just `?oob=`.
    static let acapyOob10PublicURL = "?oob=eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL291dC1vZi1iYW5kLzEuMC9pbnZpdGF0aW9uIiwgIkBpZCI6ICJhYWFhYWFhYS1iYmJiLTRjY2MtOGRkZC1lZWVlZWVlZWVlZWUiLCAibGFiZWwiOiAiUHVibGljIE9PQiIsICJoYW5kc2hha2VfcHJvdG9jb2xzIjogWyJodHRwczovL2RpZGNvbW0ub3JnL2RpZGV4Y2hhbmdlLzEuMCJdLCAic2VydmljZXMiOiBbImRpZDpzb3Y6TGpncFNUMnJqc294WWVnUURSbTdFTCJdfQ"

    /// ACA-Py `to_url()`: `?oob=` with an attachment.
    static let acapyOobAttachURL = "https://faber.example.org/didcomm?oob=eyJAdHlwZSI6ICJodHRwczovL2RpZGNvbW0ub3JnL291dC1vZi1iYW5kLzEuMS9pbnZpdGF0aW9uIiwgIkBpZCI6ICIxMTExMTExMS0yMjIyLTQzMzMtODQ0NC01NTU1NTU1NTU1NTUiLCAibGFiZWwiOiAiQXR0YWNoIE9PQiIsICJoYW5kc2hha2VfcHJvdG9jb2xzIjogW10sICJyZXF1ZXN0c35hdHRhY2giOiBbeyJAaWQiOiAicmVxdWVzdC0wIiwgIm1pbWUtdHlwZSI6ICJhcHBsaWNhdGlvbi9qc29uIiwgImRhdGEiOiB7Impzb24iOiB7IkB0eXBlIjogImh0dHBzOi8vZGlkY29tbS5vcmcvcHJlc2VudC1wcm9vZi8xLjAvcmVxdWVzdC1wcmVzZW50YXRpb24iLCAiQGlkIjogInJlcS0xIiwgImNvbW1lbnQiOiAicHJvb2YgcGxlYXNlIn19fV0sICJzZXJ2aWNlcyI6IFt7ImlkIjogIiNpbmxpbmUiLCAidHlwZSI6ICJkaWQtY29tbXVuaWNhdGlvbiIsICJyZWNpcGllbnRLZXlzIjogWyJkaWQ6a2V5Ono2TWtucGdCeG53WEtjbW0xYmQyeU1OTU5pWVVmMURpM2dhUjFDUFNtNHpnOUtpNyN6Nk1rbnBnQnhud1hLY21tMWJkMnlNTk1OaVlVZjFEaTNnYVIxQ1BTbTR6ZzlLaTciXSwgInJvdXRpbmdLZXlzIjogWyJkaWQ6a2V5Ono2TWtoRTQ1eUxuUlpYZ1EyRml1TW5OUmhGa3pwRGt5UXI2bnZ5aGVUNnNKMzZ1UiN6Nk1raEU0NXlMblJaWGdRMkZpdU1uTlJoRmt6cERreVFyNm52eWhlVDZzSjM2dVIiXSwgInNlcnZpY2VFbmRwb2ludCI6ICJodHRwczovL2ZhYmVyLmV4YW1wbGUub3JnL2RpZGNvbW0ifV19"

    /// The verkey behind ACA-Py's `did:key:z6MknpgB…` (the seeds' `9NR9NYh5…`).
    static let acapyVerkey = "9NR9NYh5z5HHu6nLHnQWXczUqRwrdoL4KBUWvo2fE6vj"
    static let acapyRoutingVerkey = "3mo3P6XzDzBvuktCgDQarACzzeV7zxrSExnicpuH7t83"
    static let acapyDIDKey = "did:key:z6MknpgBxnwXKcmm1bd2yMNMNiYUf1Di3gaR1CPSm4zg9Ki7"

    static func json(_ text: String) -> JSONValue {
        try! JSONValue(parsing: text)
    }
}
