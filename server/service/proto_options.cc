#include "server/service/proto_options.h"

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

FieldDescriptor::CppType CppTypeOf(OptionKind kind) {
  switch (kind) {
    case OptionKind::kInt32:
      return FieldDescriptor::CPPTYPE_INT32;
    case OptionKind::kInt64:
      return FieldDescriptor::CPPTYPE_INT64;
    case OptionKind::kDouble:
      return FieldDescriptor::CPPTYPE_DOUBLE;
    case OptionKind::kBool:
      return FieldDescriptor::CPPTYPE_BOOL;
    case OptionKind::kChoice:
      return FieldDescriptor::CPPTYPE_ENUM;
  }
  return FieldDescriptor::CPPTYPE_MESSAGE;
}

// The enum value of choice `index`, or null.
const EnumValueDescriptor* EnumValueOf(const FieldDescriptor& field, const OptionSpec& o,
                                       int index) {
  const google::protobuf::EnumDescriptor& type = *field.enum_type();
  for (int i = 0; i < type.value_count(); ++i) {
    if (ChoiceOfEnumName(o, type.value(i)->name()) == index) return type.value(i);
  }
  return nullptr;
}

}  // namespace

absl::Status CheckOptionField(const Descriptor& descriptor, const OptionSpec& o) {
  const FieldDescriptor* field = descriptor.FindFieldByName(std::string(o.name));
  if (field == nullptr) {
    return absl::InternalError(absl::StrCat(descriptor.full_name(), " has no field ", o.name));
  }
  if (field->is_repeated() || field->cpp_type() != CppTypeOf(o.kind)) {
    return absl::InternalError(absl::StrCat(descriptor.full_name(), ".", o.name, " is a ",
                                            field->is_repeated() ? "repeated " : "",
                                            field->cpp_type_name(), ", the table says ",
                                            FieldDescriptor::CppTypeName(CppTypeOf(o.kind))));
  }
  for (size_t i = 0; o.kind == OptionKind::kChoice && i < o.choices.size(); ++i) {
    if (EnumValueOf(*field, o, static_cast<int>(i)) == nullptr) {
      return absl::InternalError(absl::StrCat(field->enum_type()->full_name(),
                                              " has no value for the choice ", o.choices[i]));
    }
  }
  return absl::OkStatus();
}

std::optional<double> ReadOption(const Message& message, const OptionSpec& o) {
  const FieldDescriptor* field = message.GetDescriptor()->FindFieldByName(std::string(o.name));
  const google::protobuf::Reflection& r = *message.GetReflection();
  if (field->has_presence() && !r.HasField(message, field)) return std::nullopt;
  switch (o.kind) {
    case OptionKind::kInt32:
      return r.GetInt32(message, field);
    case OptionKind::kInt64:
      return static_cast<double>(r.GetInt64(message, field));
    case OptionKind::kDouble:
      return r.GetDouble(message, field);
    case OptionKind::kBool:
      return r.GetBool(message, field) ? 1 : 0;
    case OptionKind::kChoice: {
      const EnumValueDescriptor* v =
          field->enum_type()->FindValueByNumber(r.GetEnumValue(message, field));
      const int choice = v == nullptr ? -1 : ChoiceOfEnumName(o, v->name());
      if (choice < 0) return std::nullopt;
      return choice;
    }
  }
  return std::nullopt;
}

void WriteOption(Message* message, const OptionSpec& o, double value) {
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(std::string(o.name));
  const google::protobuf::Reflection& r = *message->GetReflection();
  switch (o.kind) {
    case OptionKind::kInt32:
      r.SetInt32(message, field, static_cast<int32_t>(value));
      return;
    case OptionKind::kInt64:
      r.SetInt64(message, field, static_cast<int64_t>(value));
      return;
    case OptionKind::kDouble:
      r.SetDouble(message, field, value);
      return;
    case OptionKind::kBool:
      r.SetBool(message, field, value != 0);
      return;
    case OptionKind::kChoice:
      if (const EnumValueDescriptor* v = EnumValueOf(*field, o, static_cast<int>(value))) {
        r.SetEnum(message, field, v);
      }
      return;
  }
}

}  // namespace gpubench
