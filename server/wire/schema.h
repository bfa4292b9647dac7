// A few builders for the JSON Schema (OpenAPI 3.1, i.e. JSON Schema 2020-12) that documents
// each wire type. Every codec file writes the schema of its bodies next to the code that spells
// their keys, so a key added to an encoder and not to its schema is one file apart, and the
// contract test (tests/contract) catches it on the wire: objects are closed
// (additionalProperties: false) unless they are maps.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "server/wire/wire.h"

namespace blocktune::server::wire::schema {

Json Int(std::string_view description = "");
Json Num(std::string_view description = "");
Json Str(std::string_view description = "");
Json Bool(std::string_view description = "");
Json Ref(std::string_view component);
Json Array(Json items, std::string_view description = "");
// An object whose keys are data (config names, outcome names): values all of one schema.
Json Map(Json values, std::string_view description = "");
// Also accepts null: {"type": [t, "null"]} (or oneOf for a $ref).
Json Nullable(Json s);
// A string enum from a C++ name list.
template <typename Names>
Json Enum(const Names& names, std::string_view description = "") {
  Json j = Str(description);
  Json e = Json::array();
  for (const auto& n : names) e.push_back(std::string_view(n));
  j["enum"] = e;
  return j;
}

struct Field {
  std::string_view name;
  Json schema;
  bool required = true;
};
// A closed object: only these properties; `required` ones must be present.
Json Object(std::initializer_list<Field> fields, std::string_view description = "");
Json Object(const std::vector<Field>& fields, std::string_view description = "");
// `base`'s properties and required list followed by `more`'s (e.g. a Sweep is its request
// plus state).
Json Extend(const Json& base, std::initializer_list<Field> more, std::string_view description = "");

// Request decoding: the names of `schema`'s properties are the only fields a body may have.
Status CheckKnownFields(const Json& body, const Json& schema, const std::string& path_prefix = "");

}  // namespace blocktune::server::wire::schema
