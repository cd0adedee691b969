# Sourced by the CI smoke tests of the device scripts (tests/bench/run_device_*_smoke_test.sh).
# smoke_begin BUILD_DIR: $work (a temporary folder, removed on exit) with $work/bundle laid out as
# bench/make_bundle.sh would, its bin/ linking the build's server and CLI (BUNDLE=$work/bundle).
smoke_begin() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/bundle/bin" "$work/bundle/lib"
  ln -s "$1/gpubench_server" "$1/gpubench" "$work/bundle/bin/"
}
