// The option table (common/measurement_options.h) against what it drives: every row is a field of
// the request and of the echo with the row's type, every range is what validation enforces (with
// the option, the range and the unit in the message), and a request without options echoes the
// defaults. A new proto field without a row, or a row the engine does not bind, fails here.
#include "common/measurement_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/fake_backend.h"
#include "gpubench/v1/benchmark.pb.h"
#include "server/engine/resolve.h"
#include "server/service/convert.h"
#include "server/service/proto_options.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class MeasurementOptionsTest : public ::testing::Test {
 protected:
  MeasurementOptionsTest() : backend_(testing::FakeScript{.devices = 2}) {}

  static v1::RunBenchmarkRequest Plain() {
    v1::RunBenchmarkRequest request;
    request.set_kernel("add_f32");
    request.set_elements(1000);
    return request;
  }
  absl::StatusOr<RunSpec> Resolve(const v1::RunBenchmarkRequest& request) {
    return ResolveRunRequest(FromProto(request), backend_, limits_);
  }
  // The echo of `spec` as a client reads it.
  static v1::ResolvedRun Echo(const RunSpec& spec) {
    RunResult result;
    result.spec = spec;
    v1::RunResult out;
    ToProto(result, &out);
    return out.request();
  }

  testing::FakeBackend backend_;
  ServerLimits limits_;
};

TEST(OptionTable, RowsInIdOrderWithUniqueNamesAndSaneRanges) {
  std::set<absl::string_view> names, cli_flags, server_flags;
  for (size_t i = 0; i < std::size(kMeasurementOptions); ++i) {
    const OptionSpec& o = kMeasurementOptions[i];
    SCOPED_TRACE(std::string(o.name));
    EXPECT_EQ(static_cast<size_t>(o.id), i);
    EXPECT_EQ(&OptionOf(o.id), &o);
    EXPECT_EQ(FindOption(o.name), &o);
    EXPECT_TRUE(names.insert(o.name).second);
    if (!o.cli_flag.empty()) {
      EXPECT_TRUE(cli_flags.insert(o.cli_flag).second);
    }
    if (!o.server_flag.empty()) {
      EXPECT_TRUE(server_flags.insert(o.server_flag).second);
    }
    EXPECT_FALSE(o.help.empty());
    if (HasRange(o)) {
      EXPECT_LT(o.min, o.max);
      EXPECT_FALSE(o.unit.empty());
      // The defaults are accepted values (0 where 0 means unset: a "none" default).
      if (!(o.zero_is_unset && o.default_value == 0)) {
        EXPECT_TRUE(CheckOptionRange(o, o.default_value, o.max, o.name).ok());
      }
      if (o.cpu_default != 0) {
        EXPECT_TRUE(CheckOptionRange(o, o.cpu_default, o.max, o.name).ok());
      }
    } else if (o.kind == OptionKind::kChoice) {
      EXPECT_FALSE(o.choices.empty());
      EXPECT_LT(o.default_value, static_cast<double>(o.choices.size()));
    }
  }
  EXPECT_EQ(FindOption("no_such_option"), nullptr);
}

// Each row is a field of the request (MeasurementOptions) and of the echo (ResolvedRun) with the
// row's type; every MeasurementOptions field is a row.
TEST(OptionTable, EveryRowIsAFieldOfTheRequestAndOfTheEcho) {
  for (const OptionSpec& o : kMeasurementOptions) {
    EXPECT_TRUE(CheckOptionField(*v1::MeasurementOptions::descriptor(), o).ok())
        << CheckOptionField(*v1::MeasurementOptions::descriptor(), o);
    EXPECT_TRUE(CheckOptionField(*v1::ResolvedRun::descriptor(), o).ok())
        << CheckOptionField(*v1::ResolvedRun::descriptor(), o);
  }
  const google::protobuf::Descriptor& request = *v1::MeasurementOptions::descriptor();
  for (int i = 0; i < request.field_count(); ++i) {
    EXPECT_NE(FindOption(request.field(i)->name()), nullptr)
        << "MeasurementOptions." << request.field(i)->name() << " has no row in the option table";
  }
  // A misnamed or mistyped row is caught.
  OptionSpec wrong = OptionOf(OptionId::kMinSamples);
  wrong.kind = OptionKind::kDouble;
  EXPECT_FALSE(CheckOptionField(request, wrong).ok());
  wrong.name = "min_sample";
  EXPECT_FALSE(CheckOptionField(request, wrong).ok());
}

// The choices are the engine enums' names in their order (SetOption casts the index).
TEST(OptionTable, ChoicesFollowTheEngineEnums) {
  auto names = [](OptionId id) { return OptionOf(id).choices; };
  for (size_t i = 0; i < names(OptionId::kCacheMode).size(); ++i) {
    EXPECT_EQ(CacheModeName(static_cast<CacheMode>(i)), names(OptionId::kCacheMode)[i]);
  }
  for (size_t i = 0; i < names(OptionId::kTimer).size(); ++i) {
    EXPECT_EQ(TimerChoiceName(static_cast<TimerChoice>(i)), names(OptionId::kTimer)[i]);
  }
  for (size_t i = 0; i < names(OptionId::kL2Flush).size(); ++i) {
    EXPECT_EQ(L2FlushName(static_cast<L2Flush>(i)), names(OptionId::kL2Flush)[i]);
  }
  for (size_t i = 0; i < names(OptionId::kStream).size(); ++i) {
    EXPECT_EQ(StreamKindName(static_cast<StreamKind>(i)), names(OptionId::kStream)[i]);
  }
}

// Every row's range is validation's: just outside on either side (and NaN for reals) is
// INVALID_ARGUMENT naming the option, the range and the unit; the bounds themselves resolve and
// are echoed as asked.
TEST_F(MeasurementOptionsTest, EveryRangeIsWhatValidationEnforces) {
  int checked = 0;
  for (const OptionSpec& o : kMeasurementOptions) {
    if (!HasRange(o)) continue;
    SCOPED_TRACE(std::string(o.name));
    ASSERT_EQ(MaxOf(limits_, o.id), o.max);  // a default server moves no bound
    const bool integer = o.kind != OptionKind::kDouble;
    // Below: min - 1, or -1 where that is the unset 0.
    const double below = o.min - 1 == 0 && o.zero_is_unset ? -1 : o.min - 1;
    const double above = o.max_exclusive ? o.max : o.max + (integer ? 1 : 0.5);
    std::vector<double> bad = {below, above};
    if (!integer) bad.push_back(std::nan(""));
    for (double value : bad) {
      v1::RunBenchmarkRequest request = Plain();
      WriteOption(request.mutable_measurement(), o, value);
      absl::StatusOr<RunSpec> spec = Resolve(request);
      ASSERT_FALSE(spec.ok()) << value;
      EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
      const std::string message(spec.status().message());
      EXPECT_THAT(message, HasSubstr(absl::StrCat("measurement.", o.name, " = ")));
      EXPECT_THAT(message, HasSubstr(RangeText(o, o.max)));
      EXPECT_THAT(message, HasSubstr(absl::StrCat("(unit: ", o.unit, ")")));
      ++checked;
    }
    for (double value : {o.min, o.max_exclusive ? o.max / 2 : o.max}) {
      if (value == 0 && o.zero_is_unset) continue;  // the default, checked below
      v1::RunBenchmarkRequest request = Plain();
      WriteOption(request.mutable_measurement(), o, value);
      // max_samples is also at least min_samples: ask for the fewest.
      if (o.id == OptionId::kMaxSamples) request.mutable_measurement()->set_min_samples(1);
      absl::StatusOr<RunSpec> spec = Resolve(request);
      ASSERT_TRUE(spec.ok()) << value << ": " << spec.status();
      EXPECT_EQ(ResolvedOption(*spec, o.id), value);
      EXPECT_EQ(ReadOption(Echo(*spec), o), value);
    }
  }
  EXPECT_GE(checked, 2 * 11);
}

// A request with no options resolves to the table's defaults, echoed; with a server that has
// other defaults (its --default_* flags), to those.
TEST_F(MeasurementOptionsTest, NoOptionsEchoTheDefaults) {
  absl::StatusOr<RunSpec> spec = Resolve(Plain());
  ASSERT_TRUE(spec.ok()) << spec.status();
  v1::ResolvedRun echo = Echo(*spec);
  for (const OptionSpec& o : kMeasurementOptions) {
    EXPECT_EQ(ReadOption(echo, o), o.default_value) << o.name;
  }

  // Another default for every row the server keeps (mid-range; the last choice but the timer's,
  // which the fake backend's missing CUPTI would refuse).
  for (const OptionSpec& o : kMeasurementOptions) {
    if (HasRange(o)) {
      SetOption(
          &limits_.defaults, nullptr, o.id,
          o.kind == OptionKind::kDouble ? (o.min + o.max) / 3 : std::floor((o.min + o.max) / 3));
    } else if (o.kind == OptionKind::kChoice && o.id != OptionId::kTimer) {
      SetOption(&limits_.defaults, nullptr, o.id, static_cast<double>(o.choices.size() - 1));
    } else if (o.kind == OptionKind::kBool) {
      SetOption(&limits_.defaults, nullptr, o.id, 1);
    }
  }
  spec = Resolve(Plain());
  ASSERT_TRUE(spec.ok()) << spec.status();
  echo = Echo(*spec);
  for (const OptionSpec& o : kMeasurementOptions) {
    const double expected =
        GetOption(limits_.defaults, std::nullopt, o.id).value_or(o.default_value);
    EXPECT_EQ(ReadOption(echo, o), expected) << o.name;
    EXPECT_NE(o.id != OptionId::kCacheMode && o.id != OptionId::kTimer ? expected : -1,
              o.default_value)
        << o.name << ": the server's default should differ from the table's here";
  }
}

// Unset in the request (0, UNSPECIFIED, an absent optional) is the server's default; a value
// equal to a choice's 0 (clean, cold) is the request's own.
TEST_F(MeasurementOptionsTest, ExplicitChoicesOverrideTheServerDefault) {
  SetOption(&limits_.defaults, nullptr, OptionId::kL2Flush, 1);  // memset
  v1::RunBenchmarkRequest request = Plain();
  request.mutable_measurement()->set_l2_flush(v1::L2_FLUSH_CLEAN);
  absl::StatusOr<RunSpec> spec = Resolve(request);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(Echo(*spec).l2_flush(), v1::L2_FLUSH_CLEAN);
  spec = Resolve(Plain());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(Echo(*spec).l2_flush(), v1::L2_FLUSH_MEMSET);
  request = Plain();
  request.mutable_measurement()->set_throttle_threshold(0);  // present: keep every sample
  spec = Resolve(request);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(Echo(*spec).throttle_threshold(), 0);
}

TEST(OptionTable, MessagesAndParsing) {
  const OptionSpec& pad = OptionOf(OptionId::kPlacementPadBytes);
  EXPECT_EQ(RangeText(pad, pad.max), "[0, 1073741824] (1 GiB)");
  EXPECT_EQ(RangeText(OptionOf(OptionId::kThrottleThreshold), 1), "[0, 1)");
  const absl::Status timeout = CheckOptionRange(OptionOf(OptionId::kTimeoutSeconds), 500, 120,
                                                "measurement.timeout_seconds");
  EXPECT_THAT(std::string(timeout.message()),
              HasSubstr("measurement.timeout_seconds = 500 is outside [0.001, 120] (unit: "
                        "seconds), allowed by this server (--max_timeout_seconds)"));
  const OptionSpec& stream = OptionOf(OptionId::kStream);
  EXPECT_EQ(ParseChoice(stream, "PER_THREAD", "--default_stream").value_or(-1), 2);
  EXPECT_THAT(std::string(ParseChoice(stream, "x", "--default_stream").status().message()),
              HasSubstr("--default_stream must be nonblocking, legacy or per_thread (got 'x')"));
  EXPECT_EQ(ChoiceOfEnumName(stream, "STREAM_KIND_UNSPECIFIED"), -1);
  EXPECT_EQ(ChoiceOfEnumName(OptionOf(OptionId::kTimer), "TIMER_GPU_TIME"), 3);
  EXPECT_EQ(ChoiceOfEnumName(OptionOf(OptionId::kCacheMode), "HOT"), 1);
}

}  // namespace
}  // namespace gpubench
