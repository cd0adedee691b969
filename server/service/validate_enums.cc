#include "server/service/validate_enums.h"

#include <google/protobuf/descriptor.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench {
namespace {

using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status BadEnum(const std::string& path, const EnumDescriptor& type, int value) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) names.push_back(type.value(i)->name());
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", value, " is not a ", type.name(),
                                                 " value (", absl::StrJoin(names, ", "), ")"));
}

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : absl::StrCat(prefix, ".", name);
}

absl::Status Walk(const Message& message, const std::string& prefix) {
  const Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);  // set fields only: defaults are declared values
  for (const FieldDescriptor* field : fields) {
    const std::string path = Join(prefix, field->name());
    if (field->is_repeated()) {
      const int n = reflection.FieldSize(message, field);
      for (int i = 0; i < n; ++i) {
        const std::string item = absl::StrCat(path, "[", i, "]");
        if (field->type() == FieldDescriptor::TYPE_ENUM) {
          const int v = reflection.GetRepeatedEnumValue(message, field, i);
          if (field->enum_type()->FindValueByNumber(v) == nullptr) {
            return BadEnum(item, *field->enum_type(), v);
          }
        } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (absl::Status s = Walk(reflection.GetRepeatedMessage(message, field, i), item);
              !s.ok()) {
            return s;
          }
        }
      }
    } else if (field->type() == FieldDescriptor::TYPE_ENUM) {
      const int v = reflection.GetEnumValue(message, field);
      if (field->enum_type()->FindValueByNumber(v) == nullptr) {
        return BadEnum(path, *field->enum_type(), v);
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (absl::Status s = Walk(reflection.GetMessage(message, field), path); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateEnums(const Message& message) { return Walk(message, ""); }

}  // namespace gpubench
