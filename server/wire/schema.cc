// Schema builders; see schema.h.
#include "server/wire/schema.h"

#include "server/guards/guards.h"

namespace blocktune::server::wire::schema {
namespace {
Json Typed(std::string_view type, std::string_view description) {
  Json j{{"type", type}};
  if (!description.empty()) j["description"] = description;
  return j;
}
}  // namespace

Json Int(std::string_view description) { return Typed("integer", description); }
Json Num(std::string_view description) { return Typed("number", description); }
Json Str(std::string_view description) { return Typed("string", description); }
Json Bool(std::string_view description) { return Typed("boolean", description); }
Json Ref(std::string_view component) { return Json{{"$ref", "#/components/schemas/" + std::string(component)}}; }

Json Array(Json items, std::string_view description) {
  Json j = Typed("array", description);
  j["items"] = std::move(items);
  return j;
}

Json Map(Json values, std::string_view description) {
  Json j = Typed("object", description);
  j["additionalProperties"] = std::move(values);
  return j;
}

Json Nullable(Json s) {
  if (s.contains("$ref")) return Json{{"oneOf", Json::array({s, Json{{"type", "null"}}})}};
  s["type"] = Json::array({s["type"], "null"});
  return s;
}

namespace {

template <typename Fields>
Json ExtendWith(const Json& base, const Fields& more, std::string_view description) {
  Json j{{"type", "object"}};
  if (!description.empty()) j["description"] = description;
  Json props = base.value("properties", Json::object());
  Json required = base.value("required", Json::array());
  for (const Field& f : more) {
    props[std::string(f.name)] = f.schema;
    if (f.required) required.push_back(f.name);
  }
  j["properties"] = std::move(props);
  if (!required.empty()) j["required"] = std::move(required);
  j["additionalProperties"] = false;
  return j;
}

const Json kEmptyObject{{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};

}  // namespace

Json Object(std::initializer_list<Field> fields, std::string_view description) {
  return ExtendWith(kEmptyObject, fields, description);
}

Json Object(const std::vector<Field>& fields, std::string_view description) {
  return ExtendWith(kEmptyObject, fields, description);
}

Json Extend(const Json& base, std::initializer_list<Field> more, std::string_view description) {
  return ExtendWith(base, more, description);
}

Status CheckKnownFields(const Json& body, const Json& schema, const std::string& path_prefix) {
  const Json& props = schema["properties"];
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!props.contains(it.key())) {
      const std::string name = server::guards::Clip(it.key());
      return InvalidArgument("unknown field '" + name + "'", path_prefix + name);
    }
  }
  return {};
}

}  // namespace blocktune::server::wire::schema
