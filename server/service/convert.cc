#include "server/service/convert.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/measurement_options.h"
#include "server/service/proto_options.h"

namespace gpubench {
namespace {

void ToTimestamp(absl::Time t, google::protobuf::Timestamp* out) {
  const absl::Duration since_epoch = t - absl::UnixEpoch();
  const int64_t seconds = absl::ToInt64Seconds(since_epoch);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(
      absl::ToInt64Nanoseconds(since_epoch - absl::Seconds(seconds))));
}

v1::CacheMode ToProto(CacheMode mode) { return mode == CacheMode::kHot ? v1::HOT : v1::COLD; }

// A repeated int32 field as a vector (element by element: GCC 12's -Wfree-nonheap-object
// misfires on the iterator-range constructor here).
std::vector<int> ToVector(const google::protobuf::RepeatedField<int32_t>& field) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(field.size()));
  for (int32_t v : field) out.push_back(v);
  return out;
}

// The measurement options (the cache mode among them), row by row of the option table: the
// fields the request sets (proto edge: undeclared enum values were refused before).
void MeasurementFromProto(const v1::MeasurementOptions& m, RunRequest* r) {
  for (const OptionSpec& o : kMeasurementOptions) {
    if (const std::optional<double> value = ReadOption(m, o); value.has_value()) {
      SetOption(&r->measurement, &r->cache_mode, o.id, *value);
    }
  }
}

}  // namespace

RunRequest FromProto(const v1::RunBenchmarkRequest& request) {
  RunRequest r;
  r.kernel = request.kernel();
  r.elements = request.elements();
  r.device_index = request.device_index();
  r.device_uuid = request.device_uuid();
  r.block_size = request.block_size();
  r.items_per_thread = request.items_per_thread();
  MeasurementFromProto(request.measurement(), &r);
  if (request.has_verify()) r.verify = request.verify();
  if (request.has_seed()) r.seed = request.seed();
  r.profile = request.profile();
  r.force = request.force();
  r.shape.m = request.shape().m();
  r.shape.n = request.shape().n();
  r.shape.k = request.shape().k();
  if (request.has_peer_device_index()) r.peer_device_index = request.peer_device_index();
  if (request.has_user_kernel()) r.user_kernel = FromProto(request.user_kernel());
  return r;
}

UserKernelRequest FromProto(const v1::UserKernel& k) {
  UserKernelRequest r;
  switch (k.code_case()) {
    case v1::UserKernel::kPtx:
      r.kind = UserCodeKind::kPtx;
      r.code = k.ptx();
      break;
    case v1::UserKernel::kCubin:
      r.kind = UserCodeKind::kCubin;
      r.code = k.cubin();
      break;
    default:
      r.kind = UserCodeKind::kSource;
      r.code = k.source();
      break;
  }
  r.entry = k.entry();
  r.family = k.family();
  r.dtype = k.dtype();
  r.compile.defines.assign(k.compile().defines().begin(), k.compile().defines().end());
  r.compile.maxrregcount = k.compile().maxrregcount();
  r.compile.fast_math = k.compile().fast_math();
  r.compile.line_info = k.compile().line_info();
  r.launch.block_size = k.launch().block_size();
  r.launch.items_per_thread = k.launch().items_per_thread();
  r.launch.dynamic_shared_bytes = k.launch().dynamic_shared_bytes();
  r.launch.grid_size = k.launch().grid_size();
  r.compare = k.compare();
  return r;
}

void ToProto(const UserKernelContract& c, absl::string_view entry,
             v1::GetKernelContractResponse* out) {
  out->set_family(std::string(c.family->name));
  out->set_dtype(DTypeName(c.dtype));
  out->set_signature(c.Signature(entry));
  out->set_pointer_type(c.pointer_type);
  for (const ContractParameter& p : c.parameters) {
    v1::KernelContractParameter* o = out->add_parameters();
    o->set_name(p.name);
    o->set_type(p.type);
    o->set_role(p.role);
  }
  out->set_example(c.Example(entry));
  out->set_notes(c.notes);
}

void ToProto(const KernelVariant& k, bool available, v1::KernelInfo* out) {
  out->set_name(std::string(k.name));
  out->set_family(std::string(k.family->name));
  out->set_dtype(DTypeName(k.dtype));
  out->set_bytes_per_element(BytesPerElement(k));
  out->set_metric(MetricName(k.family->metric));
  out->set_operation_unit(std::string(k.family->operation_unit));
  out->mutable_default_policy()->set_block_size(k.default_policy.block_size);
  out->mutable_default_policy()->set_items_per_thread(k.default_policy.items_per_thread);
  out->mutable_default_policy()->set_block_size_tunable(k.default_policy.block_size_tunable);
  out->mutable_default_policy()->set_grid_stride(k.default_policy.grid_stride);
  out->mutable_default_policy()->set_max_items_per_thread(k.default_policy.max_items_per_thread);
  out->mutable_default_policy()->set_dynamic_shared_bytes_per_item(
      k.default_policy.dynamic_shared_bytes_per_item);
  out->mutable_default_policy()->set_items_any_count(k.default_policy.items_any_count);
  out->set_min_compute_capability(k.min_compute_capability);
  out->set_static_shared_bytes(k.static_shared_bytes);
  out->set_description(std::string(k.description));
  out->set_provenance(std::string(k.provenance));
  out->set_available(available);
}

void ToProto(const DeviceInfo& d, v1::DeviceInfo* out) {
  out->set_index(d.index);
  out->set_backend(d.backend);
  out->set_name(d.name);
  out->set_uuid(d.uuid);
  out->set_pci_bus_id(d.pci_bus_id);
  out->set_compute_capability_major(d.compute_capability_major);
  out->set_compute_capability_minor(d.compute_capability_minor);
  out->set_multiprocessor_count(d.multiprocessor_count);
  out->set_max_threads_per_multiprocessor(d.max_threads_per_multiprocessor);
  out->set_max_blocks_per_multiprocessor(d.max_blocks_per_multiprocessor);
  out->set_registers_per_multiprocessor(d.registers_per_multiprocessor);
  out->set_shared_memory_per_multiprocessor_bytes(d.shared_memory_per_multiprocessor_bytes);
  out->set_max_threads_per_block(d.max_threads_per_block);
  out->set_registers_per_block(d.registers_per_block);
  out->set_shared_memory_per_block_bytes(d.shared_memory_per_block_bytes);
  out->set_shared_memory_per_block_optin_bytes(d.shared_memory_per_block_optin_bytes);
  out->set_warp_size(d.warp_size);
  out->set_l1_cache_bytes(d.l1_cache_bytes);
  out->set_l2_cache_bytes(d.l2_cache_bytes);
  out->set_l3_cache_bytes(d.l3_cache_bytes);
  out->set_memory_bus_width_bits(d.memory_bus_width_bits);
  out->set_memory_clock_hz(d.memory_clock_hz);
  out->set_sm_clock_hz(d.sm_clock_hz);
  out->set_peak_bandwidth_bytes_per_second(d.peak_bandwidth_bytes_per_second);
  out->set_total_memory_bytes(d.total_memory_bytes);
  out->set_free_memory_bytes(d.free_memory_bytes);
  out->set_driver_version(d.driver_version);
  out->set_runtime_version(d.runtime_version);
  out->set_node_name(d.node_name);
  if (d.nvml_index >= 0) out->set_nvml_index(d.nvml_index);
  out->set_kernel_driver_version(d.kernel_driver_version);
  out->set_pcie_link_current_generation(d.pcie_link_current_generation);
  out->set_pcie_link_current_width(d.pcie_link_current_width);
  out->set_pcie_link_max_generation(d.pcie_link_max_generation);
  out->set_pcie_link_max_width(d.pcie_link_max_width);
  out->set_pcie_link_bytes_per_second(d.pcie_link_bytes_per_second);
  out->set_pcie_link_rate_source(d.pcie_link_rate_source);
}

void ToProto(const RunResult& r, v1::RunResult* out) {
  out->set_run_id(r.run_id);
  out->set_backend(r.backend);
  const RunSpec& s = r.spec;
  v1::ResolvedRun* req = out->mutable_request();
  req->set_kernel(std::string(s.kernel->name));
  req->set_dtype(DTypeName(s.kernel->dtype));
  req->set_elements(s.elements);
  req->set_device_index(s.device_index);
  req->set_block_size(s.geometry.block_size);
  req->set_items_per_thread(s.geometry.items_per_thread);
  req->set_grid_size(s.kernel->default_policy.block_size_tunable ? s.geometry.grid_size : 0);
  req->set_verify(s.verify);
  req->set_seed(s.seed);
  req->set_profile(s.profile);
  req->set_block_size_source(s.block_size_source);
  req->set_dynamic_shared_bytes(s.geometry.dynamic_shared_bytes);
  req->mutable_shape()->set_m(s.shape.m);
  req->mutable_shape()->set_n(s.shape.n);
  req->mutable_shape()->set_k(s.shape.k);
  req->set_peer_device_index(s.peer_device_index);
  // Every measurement option as resolved, row by row of the option table.
  for (const OptionSpec& o : kMeasurementOptions) WriteOption(req, o, ResolvedOption(s, o.id));
  out->set_launch_report(r.launch_report);
  ToTimestamp(r.queued_at, out->mutable_queued_at());
  ToTimestamp(r.started_at, out->mutable_started_at());
  ToTimestamp(r.finished_at, out->mutable_finished_at());

  v1::TimingStatistics* t = out->mutable_timing();
  t->set_samples(r.stats.count);
  t->set_min_seconds(r.stats.min_seconds);
  t->set_median_seconds(r.stats.median_seconds);
  t->set_mean_seconds(r.stats.mean_seconds);
  t->set_max_seconds(r.stats.max_seconds);
  t->set_stddev_seconds(r.stats.stddev_seconds);
  t->set_relative_noise(r.stats.relative_noise);
  t->set_p5_seconds(r.stats.p5_seconds);
  t->set_p25_seconds(r.stats.p25_seconds);
  t->set_p75_seconds(r.stats.p75_seconds);
  t->set_p95_seconds(r.stats.p95_seconds);
  t->set_iqr_seconds(r.stats.iqr_seconds);
  t->set_noise_known(r.noise_known);
  t->set_below_min_samples(r.below_min_samples);

  v1::MeasurementSummary* m = out->mutable_measurement();
  m->set_method(r.method);
  m->set_hot_batch_size(r.hot_batch_size);
  m->set_throttled_samples(r.throttled_samples);
  m->set_low_clock_samples(r.low_clock_samples);
  m->set_duty_cycle(r.duty_cycle);
  m->set_noise_reached(r.noise_reached);
  m->set_stop_reason(r.stop_reason);
  m->set_measured_seconds(r.measured_seconds);
  m->set_min_sm_clock_hz(r.min_clock_hz.value_or(0));
  m->set_max_sm_clock_hz(r.max_clock_hz.value_or(0));
  m->set_stop_rule(StopRuleName(r.stop_rule));
  m->set_profile_mode(r.profile_mode);
  for (const std::string& note : r.notes) m->add_notes(note);
  m->set_samples_taken(r.samples_taken);
  m->set_sampling_wall_seconds(r.sampling_wall_seconds);
  {
    v1::RunPhases* p = m->mutable_phases();
    p->set_host_inputs_seconds(r.phases.host_inputs_seconds);
    p->set_open_seconds(r.phases.open_seconds);
    p->set_sampling_seconds(r.phases.sampling_seconds);
    p->set_verification_seconds(r.phases.verification_seconds);
    p->set_counters_seconds(r.phases.counters_seconds);
    p->set_release_seconds(r.phases.release_seconds);
    p->set_buffers_reused(r.phases.buffers_reused);
    p->set_buffers_kept(r.phases.buffers_kept);
  }
  if (s.measurement.keep_samples) {
    v1::SampleTimes* samples = out->mutable_samples();
    samples->mutable_seconds()->Assign(r.sample_seconds.begin(), r.sample_seconds.end());
    samples->set_count(r.sample_count);
    samples->set_strided(static_cast<int>(r.sample_seconds.size()) < r.sample_count);
  }
  for (const std::string& reason : r.clock_event_reasons) m->add_clock_event_reasons(reason);
  m->set_clock_events_unavailable_reason(r.clock_events_unavailable_reason);
  m->set_timer(SampleTimerName(r.timer));
  if (r.event_median_seconds.has_value()) m->set_event_median_seconds(*r.event_median_seconds);

  v1::Throughput* tp = out->mutable_throughput();
  tp->set_bytes_moved(r.bytes_moved);
  tp->set_bandwidth_bytes_per_second(r.bandwidth_bytes_per_second);
  tp->set_bandwidth_mean_bytes_per_second(r.bandwidth_mean_bytes_per_second);
  tp->set_elements_per_second(r.elements_per_second);
  if (r.percent_of_peak) tp->set_percent_of_peak_bandwidth(*r.percent_of_peak);
  if (r.peak) tp->set_peak(*r.peak);
  if (r.percent_of_copy_ceiling) {
    tp->set_percent_of_copy_ceiling(*r.percent_of_copy_ceiling);
    tp->set_copy_ceiling_bytes_per_second(r.copy_ceiling_bytes_per_second);
  }
  tp->set_operations(r.operations);
  tp->set_operations_per_second(r.operations_per_second);
  tp->set_seconds_per_operation(r.seconds_per_operation);
  tp->set_operation_unit(r.operation_unit);
  tp->set_metric(MetricName(r.metric));

  v1::Verification* v = out->mutable_verification();
  v->set_requested(r.verification.has_value());
  v->set_first_mismatch_index(-1);
  if (r.verification) {
    const Verification& rv = *r.verification;
    v->set_passed(rv.passed);
    v->set_checked_elements(rv.checked);
    v->set_mismatches(rv.mismatches);
    v->set_max_abs_error(rv.max_abs_error);
    v->set_max_rel_error(rv.max_rel_error);
    v->set_rtol(rv.rtol);
    v->set_atol(rv.atol);
    v->set_first_mismatch_index(rv.first_mismatch_index);
    v->set_first_mismatch_expected(rv.first_mismatch_expected);
    v->set_first_mismatch_actual(rv.first_mismatch_actual);
    v->set_first_mismatch_buffer(rv.first_mismatch_buffer);
    v->set_sampled(rv.sampled);
    v->set_where(rv.where == VerifiedWhere::kDevice ? "device" : "host");
    v->set_device_checked_elements(rv.device_checked);
    v->set_host_checked_elements(rv.host_checked);
    v->set_method(rv.method);
    for (const MismatchedElement& m : rv.first_mismatches) {
      v1::Mismatch* pm = v->add_first_mismatches();
      pm->set_buffer(m.buffer);
      pm->set_index(m.index);
      pm->set_expected(m.expected);
      pm->set_actual(m.actual);
    }
  }
  if (r.output_hash) out->set_output_hash(*r.output_hash);

  v1::Occupancy* o = out->mutable_occupancy();
  const KernelResources& res = r.resources;
  o->set_available(res.available);
  o->set_unavailable_reason(res.unavailable_reason);
  o->set_grid_size(req->grid_size());
  o->set_block_size(s.geometry.block_size);
  o->set_dynamic_shared_bytes(s.geometry.dynamic_shared_bytes);
  if (res.available) {
    o->set_registers_per_thread(res.registers_per_thread);
    o->set_static_shared_bytes(res.static_shared_bytes);
    o->set_local_bytes_per_thread(res.local_bytes_per_thread);
    o->set_max_threads_per_block(res.max_threads_per_block);
    o->set_ptx_version(res.ptx_version);
    o->set_binary_version(res.binary_version);
    o->set_api_active_blocks_per_multiprocessor(res.active_blocks_per_multiprocessor);
  }
  if (r.occupancy) {
    const OccupancyReport& c = *r.occupancy;
    o->set_active_blocks_per_multiprocessor(c.active_blocks_per_multiprocessor);
    o->set_theoretical_occupancy(c.theoretical_occupancy);
    o->set_waves(r.waves);
    o->set_blocks_limit_warps(c.blocks_limit_warps);
    o->set_blocks_limit_registers(c.blocks_limit_registers);
    o->set_blocks_limit_shared_memory(c.blocks_limit_shared_memory);
    o->set_blocks_limit_blocks(c.blocks_limit_blocks);
    o->set_limiter(c.limiter);
    o->set_registers_per_warp_allocated(c.registers_per_warp_allocated);
    o->set_shared_memory_per_block_allocated(c.shared_memory_per_block_allocated);
    o->set_active_warps_per_multiprocessor(c.active_warps_per_multiprocessor);
    o->set_max_warps_per_multiprocessor(c.max_warps_per_multiprocessor);
  }
  if (r.counters.achieved_occupancy) o->set_achieved_occupancy(*r.counters.achieved_occupancy);
  if (r.counters.dram_throughput_percent) {
    o->set_dram_throughput_percent(*r.counters.dram_throughput_percent);
  }
  o->set_achieved_unavailable_reason(r.counters.unavailable_reason);
  out->set_explanation(r.explanation);
  ToProto(r.device, out->mutable_device());
  if (r.user_kernel.has_value()) {
    const UserKernelReport& u = *r.user_kernel;
    v1::UserKernelReport* o = out->mutable_user_kernel();
    o->set_kind(u.kind);
    o->set_entry(u.entry);
    o->set_lowered_name(u.lowered_name);
    o->set_code_sha256(u.code_sha256);
    o->set_architecture(u.architecture);
    o->set_compile_cache_hit(u.compile_cache_hit);
    o->set_compile_seconds(u.compile_seconds);
    o->set_signature_checked(u.signature_checked);
    o->set_signature_note(u.signature_note);
    for (const std::string& c : u.integrity_checks) o->add_integrity_checks(c);
    const UserKernelIntegrity& g = u.integrity;
    v1::UserKernelIntegrity* i = o->mutable_integrity();
    i->set_launch_count_applied(g.launch_count_applied);
    i->set_launch_count_source(g.launch_count_source);
    i->set_launch_count_unavailable(g.launch_count_unavailable);
    i->set_windows_checked(g.windows_checked);
    i->set_windows_unrecorded(g.windows_unrecorded);
    i->set_windows_outside_statistics(g.windows_outside_statistics);
    i->set_expected_operations(g.expected_operations);
    i->set_foreign_kernels(g.foreign_kernels);
    i->set_timer_cross_check_applied(g.timer_cross_check_applied);
    i->set_timer_cross_check(g.timer_cross_check);
    i->set_timer_median_seconds(g.timer_median_seconds);
    i->set_kernel_median_seconds(g.kernel_median_seconds);
    i->set_timer_ratio(g.timer_ratio);
    i->set_timer_tolerance(g.timer_tolerance);
    i->set_timer_tolerance_seconds(g.timer_tolerance_seconds);
    i->set_floor_seconds(g.floor_seconds);
    i->set_floor_bound(g.floor_bound);
    i->set_dram_floor_seconds(g.dram_floor_seconds);
    i->set_l2_floor_seconds(g.l2_floor_seconds);
    i->set_flop_floor_seconds(g.flop_floor_seconds);
    o->set_compile_log(u.compile_log);
    o->set_seed(u.seed);
    for (const UserKernelComparison& c : u.comparisons) {
      v1::UserKernelComparison* p = o->add_comparisons();
      p->set_role(c.role);
      p->set_kernel(c.kernel);
      p->set_median_seconds(c.median_seconds);
      p->set_metric(c.metric);
      p->set_value(c.value);
      p->set_speedup(c.speedup);
      p->set_candidates(c.candidates);
      p->set_note(c.note);
    }
  }
}

SweepPlan FromProto(const v1::RunSweepRequest& request) {
  SweepPlan plan;
  plan.kernels.assign(request.kernels().begin(), request.kernels().end());
  plan.sizes.assign(request.sizes().begin(), request.sizes().end());
  plan.block_sizes = ToVector(request.block_sizes());
  plan.items_per_thread = ToVector(request.items_per_thread());
  plan.all_devices = request.all_devices();
  RunRequest& base = plan.base;
  base.device_index = request.device_index();
  base.device_uuid = request.device_uuid();
  MeasurementFromProto(request.measurement(), &base);
  if (request.has_verify()) base.verify = request.verify();
  if (request.has_seed()) base.seed = request.seed();
  base.profile = request.profile();
  base.force = request.force();
  if (request.has_user_kernel()) base.user_kernel = FromProto(request.user_kernel());
  return plan;
}

AutotuneRequest FromProto(const v1::AutotuneRequest& request) {
  AutotuneRequest r;
  r.kernel = request.kernel();
  r.elements = request.elements();
  r.device_index = request.device_index();
  r.block_sizes = ToVector(request.block_sizes());
  r.items_per_thread = ToVector(request.items_per_thread());
  RunRequest measurement;
  MeasurementFromProto(request.measurement(), &measurement);
  r.cache_mode = measurement.cache_mode;
  r.measurement = measurement.measurement;
  r.apply = request.apply();
  return r;
}

void ToProto(const AutotuneReport& report, v1::AutotuneResponse* out) {
  out->set_kernel(report.kernel);
  out->set_device_index(report.device_index);
  for (const std::string& skipped : report.skipped) out->add_skipped(skipped);
  for (const AutotuneRow& r : report.rows) {
    v1::AutotuneRow* row = out->add_rows();
    row->set_block_size(r.block_size);
    row->set_items_per_thread(r.items_per_thread);
    row->set_median_seconds(r.median_seconds);
    row->set_bandwidth_bytes_per_second(r.bandwidth_bytes_per_second);
    row->set_relative_noise(r.relative_noise);
    if (r.theoretical_occupancy) row->set_theoretical_occupancy(*r.theoretical_occupancy);
  }
  out->set_best_block_size(report.best.block_size);
  out->set_best_items_per_thread(report.best.items_per_thread);
  if (report.speedup_over_catalog_default) {
    out->set_speedup_over_catalog_default(*report.speedup_over_catalog_default);
  }
  out->set_applied(report.applied);
  out->set_persisted(report.persisted);
}

v1::HealthVerdict ToProto(health::Verdict verdict) {
  switch (verdict) {
    case health::Verdict::kPass:
      return v1::PASS;
    case health::Verdict::kDegraded:
      return v1::DEGRADED;
    case health::Verdict::kFail:
      return v1::FAIL;
    case health::Verdict::kUnknown:
      return v1::UNKNOWN;
  }
  return v1::UNKNOWN;
}

void ToProto(const health::GpuHealth& gpu, v1::GpuHealth* out) {
  out->set_device_index(gpu.device_index);
  out->set_gpu_uuid(gpu.gpu_uuid);
  out->set_gpu_model(gpu.gpu_model);
  out->set_verdict(ToProto(gpu.verdict));
  out->set_summary(gpu.summary);
  out->set_results(gpu.results);
  out->set_change_points(gpu.change_points);
  if (gpu.last_result != absl::InfinitePast()) {
    ToTimestamp(gpu.last_result, out->mutable_last_result());
  }
  for (const health::Evidence& e : gpu.evidence) {
    v1::HealthEvidence* p = out->add_evidence();
    p->set_verdict(ToProto(e.verdict));
    p->set_measurement(e.measurement);
    p->set_kernel(e.key.kernel);
    p->set_elements(e.key.elements);
    p->set_cache_mode(ToProto(e.key.cache_mode));
    p->set_metric(e.metric);
    if (e.value) p->set_value(*e.value);
    // Unbounded interval ends stay 0 (JSON has no infinity).
    if (std::isfinite(e.value_low)) p->set_value_low(e.value_low);
    if (std::isfinite(e.value_high)) p->set_value_high(e.value_high);
    if (e.expectation) p->set_expectation(*e.expectation);
    p->set_expectation_kind(e.expectation_kind);
    p->set_expectation_source(e.expectation_source);
    p->set_cause(e.cause);
    if (e.since != absl::InfinitePast()) ToTimestamp(e.since, p->mutable_since());
    p->set_detail(e.detail);
  }
}

}  // namespace gpubench
