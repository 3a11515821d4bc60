import AerieCore
import Foundation
import Testing

@testable import PresentProofPlugin

@Suite(.timeLimit(.minutes(10))) struct PresentationMatcherTests {
    static let resident = "https://w3id.org/citizenship#PermanentResident"
    static let degree = "https://example.org/examples#UniversityDegreeCredential"

    static func credential(_ subject: JSONValue, type: String = "PermanentResident", issued: String = "2020-01-01T12:00:00Z") -> JSONValue {
        [
            "@context": ["https://www.w3.org/2018/credentials/v1", "https://w3id.org/citizenship/v1"],
            "type": ["VerifiableCredential", .string(type)], "issuer": "did:key:z6MkIssuer", "issuanceDate": .string(issued),
            "credentialSubject": subject,
        ]
    }

    static func candidate(_ credential: JSONValue, types: [String] = [resident]) -> PresentationMatcher.Candidate {
        .init(id: UUID.random(), credential: credential, expandedTypes: ["https://www.w3.org/2018/credentials#VerifiableCredential"] + types)
    }

    static func definition(fields: [JSONValue], schema: JSONValue? = nil, extra: [String: JSONValue] = [:]) throws -> PresentationDefinition {
        var descriptor: [String: JSONValue] = ["id": "citizenship", "constraints": ["fields": .array(fields)]]
        if let schema { descriptor["schema"] = schema }
        var definition: [String: JSONValue] = ["id": "pd-1", "input_descriptors": [.object(descriptor)]]
        definition.merge(extra) { $1 }
        return try PresentationDefinition(parsing: .object(definition))
    }

    let alice = Self.candidate(Self.credential(["id": "did:key:z6MkAlice", "givenName": "Alice", "age": 34, "birthDate": "1990-03-14"]))
    let bob = Self.candidate(Self.credential(["id": "did:key:z6MkBob", "givenName": "Bob", "age": 17, "birthDate": "2008-07-01"]))

    @Test func pathsSelectMembersIndexesWildcardsAndDescendants() throws {
        let doc: JSONValue = ["a": ["b": [["c": 1], ["c": 2]], "weird key": "w"], "d": ["c": 3]]
        #expect(try JSONPath("$.a.b[0].c").select(doc) == [1])
        #expect(try JSONPath("$['a']['weird key']").select(doc) == ["w"])
        #expect(try JSONPath("$[\"a\"].b[*].c").select(doc) == [1, 2])
        #expect(try JSONPath("$..c").select(doc) == [1, 2, 3])
        #expect(try JSONPath("$.a.b[5].c").select(doc) == [])
        #expect(try JSONPath("$.d.*").select(doc) == [3])
        for bad in ["a.b", "$.a[?(@.x)]", "$.a[1:2]", "$..", "$.", "$.a[", "$" + String(repeating: ".a", count: 40)] {
            #expect(throws: JSONPath.Refused.self, "\(bad)") { try JSONPath(bad) }
        }
        #expect(throws: JSONPath.Refused.self) { try JSONPath("$." + String(repeating: "x", count: 300)) }
    }

    @Test func patternsMatchLikeSearchAndNeverRunAway() throws {
        #expect(try SafePattern("^Al").matches("Alice"))
        #expect(try SafePattern("ic").matches("Alice"))
        #expect(try !SafePattern("^ic").matches("Alice"))
        #expect(try SafePattern("^[A-Z][a-z]+$").matches("Alice"))
        #expect(try !SafePattern("^[A-Z][a-z]+$").matches("alice"))
        #expect(try SafePattern("^\\d{4}-\\d{2}-\\d{2}$").matches("1990-03-14"))
        #expect(try SafePattern("^(cat|dog)s?$").matches("dogs"))
        #expect(try !SafePattern("^(cat|dog)s?$").matches("cow"))
        #expect(try SafePattern("^[^0-9]*$").matches("abc"))
        #expect(try SafePattern("a\\.b").matches("a.b"))
        #expect(try !SafePattern("a\\.b").matches("axb"))
        // The classic runaway for a backtracking engine: linear here.
        let evil = try SafePattern("^(a+)+$")
        let started = ContinuousClock.now
        #expect(!evil.matches(String(repeating: "a", count: 5000) + "!"))
        #expect(ContinuousClock.now - started < .seconds(2))
        for bad in ["(a", "a)", "[a", "\\1", "(?=a)", "*a", "a{2,1}", String(repeating: "a", count: 300), "(a{1000}){1000}"] {
            #expect(throws: SafePattern.Refused.self, "\(bad)") { try SafePattern(bad) }
        }
    }

    @Test func filtersCheckEveryKeyword() throws {
        func filter(_ json: JSONValue) throws -> FieldFilter { try FieldFilter(parsing: json, at: "filter") }
        #expect(try filter(["type": "string"]).check("x") == nil)
        #expect(try filter(["type": "string"]).check(1) != nil)
        #expect(try filter(["type": "integer"]).check(3) == nil)
        #expect(try filter(["type": "integer"]).check(.double(3.5)) != nil)
        #expect(try filter(["const": "Alice"]).check("Alice") == nil)
        #expect(try filter(["const": "Alice"]).check("Bob") != nil)
        #expect(try filter(["enum": ["A", "B"]]).check("B") == nil)
        #expect(try filter(["enum": ["A", "B"]]).check("C") != nil)
        #expect(try filter(["type": "number", "minimum": 18]).check(18) == nil)
        #expect(try filter(["type": "number", "minimum": 18]).check(17) != nil)
        #expect(try filter(["type": "number", "exclusiveMaximum": 18]).check(18) != nil)
        #expect(try filter(["type": "number", "minimum": 18]).check("20") != nil)
        #expect(try filter(["type": "string", "format": "date", "maximum": "2005-01-01"]).check("1990-03-14") == nil)
        #expect(try filter(["type": "string", "format": "date", "maximum": "2005-01-01"]).check("2008-07-01") != nil)
        #expect(try filter(["type": "string", "format": "date-time", "exclusiveMinimum": "2019-12-31T00:00:00Z"]).check("2020-01-01T12:00:00Z") == nil)
        #expect(try filter(["type": "string", "format": "date"]).check("not a date") != nil)
        #expect(try filter(["type": "string", "minLength": 2, "maxLength": 3]).check("abcd") != nil)
        #expect(try filter(["type": "string", "pattern": "^A"]).check("Alice") == nil)
        #expect(try filter(["not": ["const": "Bob"]]).check("Alice") == nil)
        #expect(try filter(["not": ["const": "Bob"]]).check("Bob") != nil)
        #expect(throws: AerieError.self) { try filter(["type": "string", "$ref": "#/x"]) }
        #expect(throws: AerieError.self) { try filter(["type": "text"]) }
        #expect(throws: AerieError.self) { try filter(["enum": .array(Array(repeating: "x", count: 65))]) }
        #expect(throws: AerieError.self) { try filter(["format": "date", "minimum": 3]) }
    }

    @Test func fieldsPickTheCredentialsThatSatisfyThem() throws {
        let adults = try Self.definition(fields: [
            ["path": ["$.credentialSubject.age"], "filter": ["type": "number", "minimum": 18]],
            ["path": ["$.credentialSubject.givenName", "$.credentialSubject.name"]],
        ])
        let match = try PresentationMatcher.match(adults, candidates: [bob, alice])
        #expect(match.descriptors[0].matches == [alice.id])
        let chosen = try #require(match.chosen)
        #expect(chosen.map(\.credentialId) == [alice.id])

        let none = try PresentationMatcher.match(adults, candidates: [bob])
        #expect(none.chosen == nil)
        #expect(none.descriptors[0].unmetReason == "none of the 1 credentials held matches")
        #expect(none.descriptors[0].rejections.first?.reason.contains("fails minimum") == true)
        #expect(none.unmetReason == "input descriptor 'citizenship' is not met")

        let missing = try Self.definition(fields: [["path": ["$.credentialSubject.passport"]]])
        let reason = try PresentationMatcher.match(missing, candidates: [alice]).descriptors[0].rejections.first?.reason
        #expect(reason == "field 0 has no value at $.credentialSubject.passport")
        let optional = try Self.definition(fields: [["path": ["$.credentialSubject.passport"], "optional": true]])
        #expect(try PresentationMatcher.match(optional, candidates: [alice]).chosen != nil)
        #expect(try PresentationMatcher.match(adults, candidates: []).descriptors[0].unmetReason == "no credential is held")
    }

    @Test func schemaURIsNameExpandedTypesOrCredentialSchemas() throws {
        let resident = try Self.definition(
            fields: [], schema: [["uri": "https://www.w3.org/2018/credentials#VerifiableCredential"], ["uri": .string(Self.resident)]])
        let graduate = Self.candidate(Self.credential(["id": "did:key:z6MkCarol"], type: "UniversityDegreeCredential"), types: [Self.degree])
        #expect(try PresentationMatcher.match(resident, candidates: [graduate, alice]).descriptors[0].matches == [alice.id])
        let either = try Self.definition(fields: [], schema: ["oneof_filter": [[["uri": .string(Self.degree)]], [["uri": "https://x.example/none"]]]])
        #expect(try PresentationMatcher.match(either, candidates: [graduate, alice]).descriptors[0].matches == [graduate.id])
        var withSchema = Self.credential(["id": "did:key:z6MkDan"])
        withSchema = withSchema.merging(["credentialSchema": ["id": "https://schemas.example/pr.json", "type": "JsonSchemaValidator2018"]])
        let dan = Self.candidate(withSchema, types: [])
        let bySchema = try Self.definition(fields: [], schema: [["uri": "https://schemas.example/pr.json"]])
        #expect(try PresentationMatcher.match(bySchema, candidates: [alice, dan]).descriptors[0].matches == [dan.id])
    }

    @Test func limitDisclosureRequiredIsRefusedClearly() throws {
        let definition = try PresentationDefinition(parsing: [
            "id": "pd", "input_descriptors": [["id": "d", "constraints": ["limit_disclosure": "required", "fields": [["path": ["$.issuer"]]]]]],
        ])
        let match = try PresentationMatcher.match(definition, candidates: [alice])
        #expect(match.chosen == nil)
        #expect(match.descriptors[0].unmetReason?.contains("BBS+") == true)
        let preferred = try PresentationDefinition(parsing: [
            "id": "pd", "input_descriptors": [["id": "d", "constraints": ["limit_disclosure": "preferred", "fields": [["path": ["$.issuer"]]]]]],
        ])
        #expect(try PresentationMatcher.match(preferred, candidates: [alice]).chosen != nil)
    }

    @Test func submissionRequirementsAllAndPick() throws {
        func definition(_ requirements: JSONValue) throws -> PresentationDefinition {
            try PresentationDefinition(parsing: [
                "id": "pd",
                "submission_requirements": requirements,
                "input_descriptors": [
                    ["id": "name", "group": ["A"], "constraints": ["fields": [["path": ["$.credentialSubject.givenName"]]]]],
                    ["id": "age", "group": ["A"], "constraints": ["fields": [["path": ["$.credentialSubject.age"]]]]],
                    ["id": "passport", "group": ["B"], "constraints": ["fields": [["path": ["$.credentialSubject.passport"]]]]],
                ],
            ])
        }
        let all = try PresentationMatcher.match(try definition([["rule": "all", "from": "A"]]), candidates: [alice])
        #expect(all.chosen?.map(\.descriptorId) == ["name", "age"])
        let allB = try PresentationMatcher.match(try definition([["name": "travel", "rule": "all", "from": "B"]]), candidates: [alice])
        #expect(allB.chosen == nil)
        #expect(allB.unmetReason == "submission requirement 'travel' needs all of its 1, 0 are met")
        let pick = try PresentationMatcher.match(try definition([["rule": "pick", "count": 1, "from": "A"]]), candidates: [alice])
        #expect(pick.chosen?.map(\.descriptorId) == ["name"])
        let nested = try definition([
            ["rule": "pick", "count": 1, "from_nested": [["rule": "all", "from": "B"], ["rule": "all", "from": "A"]]],
        ])
        #expect(try PresentationMatcher.match(nested, candidates: [alice]).chosen?.map(\.descriptorId) == ["name", "age"])
        let tooMany = try definition([["rule": "pick", "min": 3, "from": "A"]])
        #expect(try PresentationMatcher.match(tooMany, candidates: [alice]).chosen == nil)
        #expect(throws: AerieError.self) { try definition([["rule": "all", "from": "C"]]) }
        #expect(throws: AerieError.self) { try definition([["rule": "some", "from": "A"]]) }
        #expect(throws: AerieError.self) { try definition([["rule": "all", "from": "A", "from_nested": [["rule": "all", "from": "B"]]]]) }
    }

    @Test func selectionChoosesAmongMatchesOnly() throws {
        let names = try Self.definition(fields: [["path": ["$.credentialSubject.givenName"]]])
        #expect(try PresentationMatcher.match(names, candidates: [alice, bob]).chosen?.first?.credentialId == alice.id)
        let chosen = try PresentationMatcher.match(names, candidates: [alice, bob], selection: ["citizenship": bob.id]).chosen
        #expect(chosen?.first?.credentialId == bob.id)
        #expect(throws: AerieError.self) { try PresentationMatcher.match(names, candidates: [alice], selection: ["citizenship": bob.id]) }
        #expect(throws: AerieError.self) { try PresentationMatcher.match(names, candidates: [alice], selection: ["other": alice.id]) }
    }

    @Test func submissionMapsEachDescriptorToItsCredential() throws {
        let a = UUID.random()
        let b = UUID.random()
        let (submission, order) = PresentationMatcher.submission(
            definitionId: "pd", chosen: [("z", a), ("m", b), ("a", a)], submissionId: "sub-1")
        #expect(order == [a, b])
        #expect(submission["definition_id"] == "pd")
        #expect(submission["descriptor_map"] == [
            ["id": "a", "format": "ldp_vc", "path": "$.verifiableCredential[0]"],
            ["id": "m", "format": "ldp_vc", "path": "$.verifiableCredential[1]"],
            ["id": "z", "format": "ldp_vc", "path": "$.verifiableCredential[0]"],
        ])
    }

    @Test func oversizedOrMalformedDefinitionsAreRefused() throws {
        let field: JSONValue = ["path": ["$.a"]]
        let tooManyDescriptors: JSONValue = [
            "id": "pd", "input_descriptors": .array((0..<33).map { .object(["id": .string("d\($0)")]) }),
        ]
        let tooManyFields: JSONValue = [
            "id": "pd", "input_descriptors": [["id": "d", "constraints": ["fields": .array(Array(repeating: field, count: 33))]]],
        ]
        let tooManyPaths: JSONValue = [
            "id": "pd", "input_descriptors": [["id": "d", "constraints": ["fields": [["path": .array(Array(repeating: "$.a", count: 9))]]]]],
        ]
        let runaway: JSONValue = [
            "id": "pd",
            "input_descriptors": [["id": "d", "constraints": ["fields": [["path": ["$.a"], "filter": ["pattern": "(?=x)"]]]]]],
        ]
        for bad: JSONValue in [
            "x", [:], ["id": "pd"], ["id": "pd", "input_descriptors": []], ["id": "pd", "input_descriptors": [["id": "d"], ["id": "d"]]],
            tooManyDescriptors, tooManyFields, tooManyPaths, runaway,
            ["id": .string(String(repeating: "x", count: 3000)), "input_descriptors": [["id": "d"]]],
        ] {
            let error = #expect(throws: AerieError.self) { try PresentationDefinition(parsing: bad) }
            #expect(error?.code == .invalidParams)
            #expect(error?.data["problemCode"] == "malformed-message")
        }
    }

    @Test func typedLiteralsAreFilteredByTheirValue() throws {
        let typed = Self.candidate(Self.credential(["id": "did:key:z6MkEve", "age": ["type": "xsd:integer", "@value": "40"]]))
        let adults = try Self.definition(fields: [["path": ["$.credentialSubject.age"], "filter": ["type": "number", "minimum": 18]]])
        #expect(try PresentationMatcher.match(adults, candidates: [typed]).chosen != nil)
    }
}

extension JSONValue {
    fileprivate func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case .object(var fields) = self else { return self }
        fields.merge(other) { $1 }
        return .object(fields)
    }
}
