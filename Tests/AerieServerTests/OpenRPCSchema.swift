import AerieCore

/// Aerie's own schema of an OpenRPC 1.x document, written by this team from the rules of the
/// OpenRPC specification (https://spec.open-rpc.org), not copied from a published meta-schema.
/// It checks what the specification requires of each object and, to catch typos, refuses
/// members the specification does not name (extensions `x-...` are always allowed). What a JSON
/// Schema cannot say (method names unique, param names unique within a method) is checked in
/// Swift by `OpenRPCSchema.structuralFailures`.
enum OpenRPCSchema {
    static let text = #"""
    {
      "title": "An OpenRPC 1.x document, as Aerie's tests read the specification",
      "type": "object",
      "required": ["openrpc", "info", "methods"],
      "properties": {
        "openrpc": {"type": "string", "pattern": "^1\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$"},
        "info": {"$ref": "#/definitions/info"},
        "servers": {"type": "array", "items": {"$ref": "#/definitions/server"}},
        "methods": {"type": "array", "items": {"anyOf": [{"$ref": "#/definitions/method"}, {"$ref": "#/definitions/reference"}]}},
        "components": {"$ref": "#/definitions/components"},
        "externalDocs": {"$ref": "#/definitions/externalDocs"}
      },
      "patternProperties": {"^x-": true},
      "additionalProperties": false,
      "definitions": {
        "reference": {
          "type": "object", "required": ["$ref"], "properties": {"$ref": {"type": "string"}}, "additionalProperties": false
        },
        "info": {
          "type": "object",
          "required": ["title", "version"],
          "properties": {
            "title": {"type": "string"},
            "description": {"type": "string"},
            "termsOfService": {"type": "string"},
            "version": {"type": "string"},
            "contact": {
              "type": "object",
              "properties": {"name": {"type": "string"}, "url": {"type": "string"}, "email": {"type": "string"}},
              "patternProperties": {"^x-": true}, "additionalProperties": false
            },
            "license": {
              "type": "object", "required": ["name"],
              "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
              "patternProperties": {"^x-": true}, "additionalProperties": false
            }
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        },
        "server": {
          "type": "object",
          "required": ["url"],
          "properties": {
            "name": {"type": "string"},
            "url": {"type": "string"},
            "summary": {"type": "string"},
            "description": {"type": "string"},
            "variables": {
              "type": "object",
              "additionalProperties": {
                "type": "object", "required": ["default"],
                "properties": {
                  "default": {"type": "string"}, "description": {"type": "string"},
                  "enum": {"type": "array", "items": {"type": "string"}}
                },
                "patternProperties": {"^x-": true}, "additionalProperties": false
              }
            }
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        },
        "externalDocs": {
          "type": "object", "required": ["url"],
          "properties": {"url": {"type": "string"}, "description": {"type": "string"}},
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "tag": {
          "type": "object", "required": ["name"],
          "properties": {
            "name": {"type": "string", "minLength": 1}, "summary": {"type": "string"}, "description": {"type": "string"},
            "externalDocs": {"$ref": "#/definitions/externalDocs"}
          },
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "error": {
          "type": "object", "required": ["code", "message"],
          "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": true},
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "example": {
          "type": "object",
          "properties": {
            "name": {"type": "string"}, "summary": {"type": "string"}, "description": {"type": "string"},
            "value": true, "externalValue": {"type": "string"}
          },
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "examplePairing": {
          "type": "object", "required": ["name", "params"],
          "properties": {
            "name": {"type": "string"}, "summary": {"type": "string"}, "description": {"type": "string"},
            "params": {"type": "array", "items": {"anyOf": [{"$ref": "#/definitions/example"}, {"$ref": "#/definitions/reference"}]}},
            "result": {"anyOf": [{"$ref": "#/definitions/example"}, {"$ref": "#/definitions/reference"}]}
          },
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "link": {
          "type": "object", "required": ["name"],
          "properties": {
            "name": {"type": "string"}, "summary": {"type": "string"}, "description": {"type": "string"},
            "method": {"type": "string"}, "params": true, "server": {"$ref": "#/definitions/server"}
          },
          "patternProperties": {"^x-": true}, "additionalProperties": false
        },
        "contentDescriptor": {
          "type": "object",
          "required": ["name", "schema"],
          "properties": {
            "name": {"type": "string", "minLength": 1},
            "summary": {"type": "string"},
            "description": {"type": "string"},
            "required": {"type": "boolean"},
            "deprecated": {"type": "boolean"},
            "schema": {"$ref": "#/definitions/schema"}
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        },
        "method": {
          "type": "object",
          "required": ["name", "params", "result"],
          "properties": {
            "name": {"type": "string", "minLength": 1},
            "summary": {"type": "string"},
            "description": {"type": "string"},
            "deprecated": {"type": "boolean"},
            "tags": {"type": "array", "items": {"anyOf": [{"$ref": "#/definitions/tag"}, {"$ref": "#/definitions/reference"}]}},
            "externalDocs": {"$ref": "#/definitions/externalDocs"},
            "params": {
              "type": "array",
              "items": {"anyOf": [{"$ref": "#/definitions/contentDescriptor"}, {"$ref": "#/definitions/reference"}]}
            },
            "result": {"anyOf": [{"$ref": "#/definitions/contentDescriptor"}, {"$ref": "#/definitions/reference"}]},
            "errors": {"type": "array", "items": {"anyOf": [{"$ref": "#/definitions/error"}, {"$ref": "#/definitions/reference"}]}},
            "links": {"type": "array", "items": {"anyOf": [{"$ref": "#/definitions/link"}, {"$ref": "#/definitions/reference"}]}},
            "servers": {"type": "array", "items": {"$ref": "#/definitions/server"}},
            "paramStructure": {"enum": ["by-name", "by-position", "either"]},
            "examples": {
              "type": "array",
              "items": {"anyOf": [{"$ref": "#/definitions/examplePairing"}, {"$ref": "#/definitions/reference"}]}
            }
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        },
        "components": {
          "type": "object",
          "properties": {
            "schemas": {"type": "object", "additionalProperties": {"$ref": "#/definitions/schema"}},
            "contentDescriptors": {"type": "object", "additionalProperties": {"$ref": "#/definitions/contentDescriptor"}},
            "errors": {"type": "object", "additionalProperties": {"$ref": "#/definitions/error"}},
            "tags": {"type": "object", "additionalProperties": {"$ref": "#/definitions/tag"}},
            "examples": {"type": "object", "additionalProperties": {"$ref": "#/definitions/example"}},
            "examplePairingObjects": {"type": "object", "additionalProperties": {"$ref": "#/definitions/examplePairing"}},
            "links": {"type": "object", "additionalProperties": {"$ref": "#/definitions/link"}}
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        },
        "typeName": {"enum": ["null", "boolean", "object", "array", "number", "integer", "string"]},
        "schemaList": {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/schema"}},
        "schemaMap": {"type": "object", "additionalProperties": {"$ref": "#/definitions/schema"}},
        "count": {"type": "integer", "minimum": 0},
        "schema": {
          "type": ["object", "boolean"],
          "properties": {
            "$ref": {"type": "string"},
            "$id": {"type": "string"},
            "$schema": {"type": "string"},
            "$comment": {"type": "string"},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "default": true,
            "examples": {"type": "array"},
            "readOnly": {"type": "boolean"},
            "writeOnly": {"type": "boolean"},
            "format": {"type": "string"},
            "type": {
              "anyOf": [
                {"$ref": "#/definitions/typeName"},
                {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"$ref": "#/definitions/typeName"}}
              ]
            },
            "enum": {"type": "array"},
            "const": true,
            "allOf": {"$ref": "#/definitions/schemaList"},
            "anyOf": {"$ref": "#/definitions/schemaList"},
            "oneOf": {"$ref": "#/definitions/schemaList"},
            "not": {"$ref": "#/definitions/schema"},
            "if": {"$ref": "#/definitions/schema"},
            "then": {"$ref": "#/definitions/schema"},
            "else": {"$ref": "#/definitions/schema"},
            "items": {"anyOf": [{"$ref": "#/definitions/schema"}, {"$ref": "#/definitions/schemaList"}]},
            "additionalItems": {"$ref": "#/definitions/schema"},
            "contains": {"$ref": "#/definitions/schema"},
            "minItems": {"$ref": "#/definitions/count"},
            "maxItems": {"$ref": "#/definitions/count"},
            "uniqueItems": {"type": "boolean"},
            "properties": {"$ref": "#/definitions/schemaMap"},
            "patternProperties": {"$ref": "#/definitions/schemaMap"},
            "definitions": {"$ref": "#/definitions/schemaMap"},
            "additionalProperties": {"$ref": "#/definitions/schema"},
            "propertyNames": {"$ref": "#/definitions/schema"},
            "required": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "minProperties": {"$ref": "#/definitions/count"},
            "maxProperties": {"$ref": "#/definitions/count"},
            "minLength": {"$ref": "#/definitions/count"},
            "maxLength": {"$ref": "#/definitions/count"},
            "pattern": {"type": "string"},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
            "exclusiveMinimum": {"type": "number"},
            "exclusiveMaximum": {"type": "number"},
            "multipleOf": {"type": "number", "exclusiveMinimum": 0}
          },
          "patternProperties": {"^x-": true},
          "additionalProperties": false
        }
      }
    }
    """#

    static func validator() throws -> JSONSchemaValidator {
        JSONSchemaValidator(try JSONValue(parsing: text))
    }

    /// The specification's rules a JSON Schema cannot state: every method's name is unique in the
    /// document, and every param's name is unique within its method.
    static func structuralFailures(_ document: JSONValue) -> [JSONSchemaValidator.Failure] {
        guard case .array(let methods)? = document["methods"] else { return [] }
        var failures: [JSONSchemaValidator.Failure] = []
        var methodNames: Set<String> = []
        for (index, method) in methods.enumerated() {
            if let name = method["name"]?.stringValue, !methodNames.insert(name).inserted {
                failures.append(.init(path: "/methods/\(index)/name", message: "a second method named \(name)"))
            }
            guard case .array(let params)? = method["params"] else { continue }
            var paramNames: Set<String> = []
            for (paramIndex, param) in params.enumerated() {
                if let name = param["name"]?.stringValue, !paramNames.insert(name).inserted {
                    failures.append(.init(path: "/methods/\(index)/params/\(paramIndex)/name", message: "a second param named \(name)"))
                }
            }
        }
        return failures
    }

    /// Every failure of `document`: the schema's and the structural ones.
    static func failures(_ document: JSONValue) throws -> [JSONSchemaValidator.Failure] {
        try validator().validate(document) + structuralFailures(document)
    }
}
