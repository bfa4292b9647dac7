// Helpers the codec files share (field getters that name the offending field) and the
// component schemas each codec file documents; not part of the wire API.
#pragma once

#include <optional>
#include <string>

#include "server/wire/wire.h"

namespace blocktune::server::wire::internal {

Result<int64_t> GetInt(const Json& obj, const char* key, const std::string& path, std::optional<int64_t> fallback);
Result<std::string> GetString(const Json& obj, const char* key, const std::string& path,
                              std::optional<std::string> fallback, size_t max_len = 256);
Result<Config> DecodeConfigObject(const Json& j, const std::string& path);

// Each adds its resource's component schemas to `schemas`.
void AddCommonSchemas(Json& schemas);
void AddSweepSchemas(Json& schemas);
void AddLookupSchemas(Json& schemas);
void AddKernelSchemas(Json& schemas);
void AddTunedSchemas(Json& schemas);
void AddOverrideSchemas(Json& schemas);
void AddMissSchemas(Json& schemas);
void AddDashboardSchemas(Json& schemas);  // after AddTunedSchemas and AddOverrideSchemas: extends TunedEntry
void AddResultsSchemas(Json& schemas);

}  // namespace blocktune::server::wire::internal
