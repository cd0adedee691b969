// Runs every gpubench and grpcurl example of README.md and docs/*.md (the docs folder beside the
// README), as a new user would, against a real gpubench_server on the CPU backend (ctest
// `readme_examples`), so that a doc edit that breaks an example fails CI.
//
//   node tests/e2e/readme/readme_examples.mjs README.md build/gpubench_server build/gpubench
//
// Examples are the command lines of the README's fenced ```sh (and unlabelled) code blocks. The
// grpcurl ones run through an independent client that learns the schema only through the
// server's reflection service (grpc-js + grpc-js-reflection-client, not gpubench's own code),
// with grpcurl's strictness: an unknown JSON field or enum value is an error. The gpubench ones
// run the CLI as written. What a new user adapts to their machine is adapted the same way here,
// and printed for every example:
//   - the address: localhost:50051 (and fleet targets, DNS names, target files) become the test
//     server's ephemeral port;
//   - a device UUID becomes the test server's device 0 UUID (the README's is an H200's);
//   - element counts are divided by 256 (256Mi -> 1Mi; at least 1Ki), as the README advises for
//     the CPU backend ("these sizes are slow"); `compare` without --sizes gets its defaults
//     scaled the same way;
//   - the server's sampling budget is 0.25 s by default (--default_timeout_seconds), and a
//     plan's timeoutSeconds is capped to it: the README's CPU examples would take minutes;
//   - fleet's plan.json is the docs' plan block; its --baseline is a report made first;
//     user-plan.json is the docs' user-kernel plan block (docs/fleet.md, "A user-kernel plan").
//   - a user kernel (run, sweep, RunBenchmark, RunSweep, a fleet plan's user sweep) on the CPU
//     backend answers FAILED_PRECONDITION after the compile checks passed, as documented: that
//     answer, and no other, is accepted for each of its runs.
// Commands that are not gpubench's (docker, buildah, scripts, ncu/nsys, jq) are listed as not run,
// with the reason.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import { GrpcReflection } from 'grpc-js-reflection-client';

const [readmePath, serverBinary, cliBinary] = process.argv.slice(2);
if (!readmePath || !serverBinary || !cliBinary) {
  console.error('usage: readme_examples.mjs README.md gpubench_server gpubench');
  process.exit(2);
}
const SCALE = 256;
const MIN_ELEMENTS = 1024;

// ---- Extraction ------------------------------------------------------------------------------

// Fenced code blocks (```sh or unlabelled, possibly indented in a list): their command lines,
// backslash continuations joined, with the README line each starts on.
export function extractCommands(markdown) {
  const commands = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; ++i) {
    const open = lines[i].match(/^(\s*)```(\w*)\s*$/);
    if (!open) continue;
    const [, indent, lang] = open;
    let j = i + 1;
    const body = [];
    while (j < lines.length && !lines[j].match(/^\s*```\s*$/)) body.push([j + 1, lines[j++]]);
    i = j;
    if (lang !== 'sh' && lang !== '') continue;
    for (let k = 0; k < body.length; ++k) {
      const [lineNumber] = body[k];
      let text = stripComment(body[k][1].slice(indent.length)).trimEnd();
      // Backslash continuations, and quoted text (a JSON body) that goes on over lines.
      while ((text.endsWith('\\') || openQuote(text)) && k + 1 < body.length) {
        text = text.endsWith('\\') ? text.slice(0, -1) + ' ' + stripComment(body[++k][1]).trim()
                                    : text + '\n' + body[++k][1];
      }
      text = stripComment(text).trim();
      if (text && !text.startsWith('```')) commands.push({ line: lineNumber, text });
    }
  }
  return commands;
}

// The quote character left open at the end of `text`, or null.
function openQuote(text) {
  let quote = null;
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') {
      quote = c;
    }
  }
  return quote;
}

// Drops a trailing "# comment" (outside quotes).
function stripComment(text) {
  let quote = null;
  for (let i = 0; i < text.length; ++i) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]))) {
      return text.slice(0, i);
    }
  }
  return text;
}

// Shell words: single and double quotes, no expansion (the README's examples need none).
export function shellWords(text) {
  const words = [];
  let word = null;
  let quote = null;
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unbalanced ${quote} in: ${text}`);
  if (word !== null) words.push(word);
  return words;
}

// The docs' scheduled plan (the ```json block after "A plan is a `RunSweepRequest`").
function extractPlan(markdown) {
  const match = markdown.match(/A plan is a `RunSweepRequest`[\s\S]*?```json\n([\s\S]*?)```/);
  if (!match) throw new Error('docs: no plan JSON block after "A plan is a `RunSweepRequest`"');
  return JSON.parse(match[1]);
}

// The docs' user-kernel plan (the ```json block after "A user-kernel plan").
function extractUserPlan(markdown) {
  const match = markdown.match(/A user-kernel plan[\s\S]*?```json\n([\s\S]*?)```/);
  if (!match) throw new Error('docs: no plan JSON block after "A user-kernel plan"');
  return JSON.parse(match[1]);
}

// ---- Adaptation to the test machine ----------------------------------------------------------

const UNITS = { '': 1, K: 1e3, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
function parseCount(text) {
  const m = String(text).match(/^(\d+)(Ki|Mi|Gi|K|k|M|G)?$/);
  if (!m) throw new Error(`not an element count: ${text}`);
  return Number(m[1]) * UNITS[m[2] ?? ''];
}
function scaled(count) {
  return Math.max(MIN_ELEMENTS, Math.floor(count / SCALE));
}

function adaptCliArgs(words, context) {
  const args = [];
  const notes = [];
  for (const word of words) {
    const m = word.match(/^--([a-z_]+)=(.*)$/);
    if (!m) {
      args.push(word);
      continue;
    }
    const [, flag, value] = m;
    if (flag === 'size' || flag === 'sizes') {
      const scaledValues = value.split(',').map((v) => String(scaled(parseCount(v))));
      args.push(`--${flag}=${scaledValues.join(',')}`);
      notes.push(`--${flag}=${value} -> ${scaledValues.join(',')}`);
    } else if (flag === 'device_uuid') {
      args.push(`--device_uuid=${context.uuid}`);
      notes.push(`--device_uuid -> this server's device 0`);
    } else if (flag === 'targets') {
      args.push(`--targets=${value.split(',').map(() => context.target).join(',')}`);
      notes.push(`--targets=${value} -> the test server`);
    } else if (flag === 'dns') {
      args.push(`--dns=${context.target}`);
      notes.push(`--dns=${value} -> the test server's address`);
    } else {
      args.push(word);
    }
  }
  if (args[0] === 'compare' && !words.some((w) => w.startsWith('--sizes='))) {
    const defaults = ['1Mi', '16Mi', '256Mi'].map((v) => scaled(parseCount(v)));
    args.push(`--sizes=${defaults.join(',')}`);
    notes.push(`compare's default sizes 1Mi,16Mi,256Mi -> ${defaults.join(',')}`);
  }
  return { args, notes };
}

// JSON bodies: element counts ("elements", "sizes") scaled as the CLI's sizes are.
function adaptBody(body, notes) {
  const walk = (value) => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const out = {};
    for (const [key, v] of Object.entries(value)) {
      if (key === 'elements') {
        out[key] = String(scaled(Number(v)));
        notes.push(`elements ${v} -> ${out[key]}`);
      } else if (key === 'timeoutSeconds' || key === 'timeout_seconds') {
        out[key] = Math.min(Number(v), 0.25);
        if (out[key] !== v) notes.push(`${key} ${v} -> ${out[key]}`);
      } else if (key === 'sizes') {
        out[key] = v.map((s) => String(scaled(Number(s))));
        notes.push(`sizes ${v.join(',')} -> ${out[key].join(',')}`);
      } else {
        out[key] = walk(v);
      }
    }
    return out;
  };
  return walk(body);
}

// ---- grpcurl through reflection --------------------------------------------------------------

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// protobuf JSON -> a protobufjs message, refusing what grpcurl refuses (unknown fields and enum
// values), accepting field names as written in the .proto or in lowerCamelCase.
function strictFromJson(type, json, where) {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(`${where}: expected an object for ${type.fullName}`);
  }
  const normalized = {};
  for (const [key, value] of Object.entries(json)) {
    const field =
      type.fields[key] ?? Object.values(type.fields).find((f) => camel(f.name) === key);
    if (!field) throw new Error(`${where}: message ${type.fullName} has no field "${key}"`);
    field.resolve();
    const convert = (v, at) => {
      if (field.resolvedType && field.resolvedType.fields) {
        return strictFromJson(field.resolvedType, v, at);
      }
      if (field.resolvedType && field.resolvedType.values) {
        if (typeof v === 'string' && !(v in field.resolvedType.values)) {
          throw new Error(`${at}: enum ${field.resolvedType.fullName} has no value "${v}"`);
        }
      }
      return v;
    };
    normalized[field.name] = field.repeated
      ? value.map((v, i) => convert(v, `${where}.${key}[${i}]`))
      : convert(value, `${where}.${key}`);
  }
  const problem = type.verify(type.fromObject(normalized));
  if (problem) throw new Error(`${where}: ${problem}`);
  return type.fromObject(normalized);
}

function toJson(type, message) {
  return type.toObject(message, { longs: String, enums: String, defaults: false, json: true });
}

async function grpcurl(words, context) {
  const flags = { plaintext: false, data: null, headers: [] };
  const positional = [];
  for (let i = 0; i < words.length; ++i) {
    const w = words[i];
    if (w === '-plaintext') flags.plaintext = true;
    else if (w === '-d') flags.data = words[++i];
    else if (w === '-H') flags.headers.push(words[++i]);
    else if (w.startsWith('-')) throw new Error(`grpcurl flag ${w} is not emulated here`);
    else positional.push(w);
  }
  if (!flags.plaintext) throw new Error('grpcurl without -plaintext: the test server is plaintext');
  const [address, verb, symbol] = positional;
  if (address !== 'localhost:50051') throw new Error(`unexpected address ${address}`);
  const notes = [`localhost:50051 -> ${context.target}`];
  const reflection = new GrpcReflection(context.target, grpc.credentials.createInsecure(), {},
                                        'v1alpha');
  if (verb === 'list') {
    const services = await reflection.listServices();
    for (const s of ['gpubench.v1.Benchmark', 'grpc.health.v1.Health']) {
      if (!services.includes(s)) throw new Error(`list: ${s} is missing (${services})`);
    }
    return { output: services.join('\n'), notes };
  }
  if (verb === 'describe') {
    const root = (await reflection.getDescriptorBySymbol(symbol)).getProtobufJsRoot();
    const service = root.lookupService(symbol);
    const methods = Object.values(service.methods);
    if (methods.length === 0) throw new Error(`describe ${symbol}: no methods`);
    return {
      output: methods.map((m) => `rpc ${m.name} ( ${m.requestType} ) returns ( ${
        m.responseStream ? 'stream ' : ''}${m.responseType} )`).join('\n'),
      notes,
    };
  }
  const slash = verb.lastIndexOf('/');
  if (slash < 0) throw new Error(`grpcurl: expected list, describe or Service/Method, got ${verb}`);
  const serviceName = verb.slice(0, slash);
  const methodName = verb.slice(slash + 1);
  const root = (await reflection.getDescriptorBySymbol(serviceName)).getProtobufJsRoot();
  const method = root.lookupService(serviceName).methods[methodName];
  if (!method) throw new Error(`${serviceName} has no method ${methodName}`);
  method.resolve();
  const body = flags.data === null ? {} : adaptBody(JSON.parse(flags.data), notes);
  const request = strictFromJson(method.resolvedRequestType, body, 'request');
  const requestType = method.resolvedRequestType;
  const responseType = method.resolvedResponseType;
  const client = new grpc.Client(context.target, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  for (const h of flags.headers) {
    const colon = h.indexOf(':');
    metadata.add(h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim());
  }
  const rpcPath = `/${serviceName}/${methodName}`;
  const serialize = (m) => Buffer.from(requestType.encode(m).finish());
  const deserialize = (b) => responseType.decode(b);
  const deadline = { deadline: Date.now() + 300_000 };
  const responses = await new Promise((resolve, reject) => {
    if (method.responseStream) {
      const out = [];
      const call = client.makeServerStreamRequest(rpcPath, serialize, deserialize, request,
                                                  metadata, deadline);
      call.on('data', (m) => out.push(m));
      call.on('error', reject);
      call.on('end', () => resolve(out));
    } else {
      client.makeUnaryRequest(rpcPath, serialize, deserialize, request, metadata, deadline,
                              (error, m) => (error ? reject(error) : resolve([m])));
    }
  }).catch((error) => {
    // A user kernel on the CPU backend: FAILED_PRECONDITION after the compile checks (documented).
    if (body.user_kernel && error.code === grpc.status.FAILED_PRECONDITION) {
      return cpuUserKernelOutcome(true, `FAILED_PRECONDITION: ${error.details}`, notes, '');
    }
    throw error;
  }).finally(() => client.close());
  if (!Array.isArray(responses)) return responses;
  if (responses.length === 0) throw new Error(`${rpcPath}: no response`);
  const printed = responses.map((m) => JSON.stringify(toJson(responseType, m)));
  // A user kernel's sweep on the CPU backend: every item an error, each the documented answer.
  if (body.user_kernel && method.responseStream) {
    const errors = printed.filter((p) => p.includes('"error"'));
    if (errors.length === 0 || printed.some((p) => p.includes('"result"'))) {
      throw new Error(`a user kernel's sweep on the CPU backend: expected only item errors\n${printed.join('\n')}`);
    }
    for (const e of errors) cpuUserKernelOutcome(true, `FAILED_PRECONDITION: ${e}`, [], '');
    notes.push(`${errors.length} item errors, each the CPU backend's documented answer to a user kernel`);
  }
  if (rpcPath === '/grpc.health.v1.Health/Check' && !printed[0].includes('"SERVING"')) {
    throw new Error(`health: ${printed[0]}`);
  }
  return { output: printed.join('\n'), notes };
}

// ---- gpubench CLI ----------------------------------------------------------------------------

function runCli(args, cwd) {
  const r = spawnSync(cliBinary, args, { cwd, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error };
}

function gpubench(words, context) {
  const { args, notes } = adaptCliArgs(words.slice(1), context);
  // Commands that talk to one server go to the test server; fleet names its targets itself.
  const withTarget = args[0] === 'fleet' || args.includes('--help') || args.length === 0 ||
      args.includes('--version') ? args : [...args, `--target=${context.target}`];
  const accepted = args.includes('--baseline=last-week.json') ? [0, 5] : [0];
  if (args.includes('--baseline=last-week.json')) {
    notes.push('exit 5 (a regression: CPU timings vary) is an accepted outcome');
  }
  const r = runCli(withTarget, context.cwd);
  if (r.error) throw r.error;
  if (args[0] === 'run' && args.some((a) => /^--(source|ptx|cubin)=/.test(a))) {
    return cpuUserKernelOutcome(r.code === 1, r.stderr, notes, r.stdout);
  }
  if (args[0] === 'sweep' && args.some((a) => /^--(source|ptx|cubin)=/.test(a))) {
    // Each item is an error line ("error in item N: ..."), exit 1.
    const items = r.stdout.split('\n').filter((l) => l.startsWith('error in item '));
    if (r.code !== 1 || items.length === 0) {
      throw new Error(`exit ${r.code}, ${items.length} item errors\n${r.stdout}\n${r.stderr}`);
    }
    for (const l of items) cpuUserKernelOutcome(true, `FAILED_PRECONDITION: ${l}`, [], '');
    notes.push(`${items.length} item errors, each the CPU backend's documented answer to a user kernel`);
    return { output: r.stdout, notes };
  }
  if (args[0] === 'fleet' && args.includes('--plan=user-plan.json')) {
    // The catalog sweep's rows, then the user sweep's items: errors on the CPU backend (exit 1).
    const failed = r.stdout.split('\n').filter((l) => l.startsWith('FAILED '));
    if (r.code !== 1 || failed.length !== 1 || !/plan item\(s\) failed: user:my_add@[0-9a-f]{12} /.test(failed[0])) {
      throw new Error(`exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
    }
    cpuUserKernelOutcome(true, `FAILED_PRECONDITION: ${failed[0]}`, notes, '');
    return { output: r.stdout, notes };
  }
  if (!accepted.includes(r.code)) {
    throw new Error(`exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  }
  for (const f of args.flatMap((a) => a.match(/^--(?:output_file|report_file)=(.*)$/)?.[1] ?? [])) {
    const text = fs.readFileSync(path.join(context.cwd, f), 'utf8');
    if (f.endsWith('.json')) JSON.parse(text);
    notes.push(`${f}: ${text.length} bytes${f.endsWith('.json') ? ', valid JSON' : ''}`);
  }
  return { output: r.stdout, notes };
}

// A user-kernel run on the CPU backend: the documented answer is FAILED_PRECONDITION after the
// compile checks passed (docs/user-kernels.md). Anything else (a compile error, a refused flag,
// a missing file) is a failure of the example.
function cpuUserKernelOutcome(failedAsDocumented, message, notes, output) {
  const why = 'cannot run a user kernel';
  if (!failedAsDocumented || !message.includes('FAILED_PRECONDITION') || !message.includes(why) ||
      !message.includes('passed the compile checks')) {
    throw new Error(`not the CPU backend's documented answer to a user kernel:\n${message}${output}`);
  }
  notes.push('the CPU backend answers FAILED_PRECONDITION after the compile checks passed, as ' +
             'documented: ' + message.trim().split('\n')[0].slice(0, 160));
  return { output: message, notes };
}

// nvcc, for the examples that make a PTX or cubin file: the toolkit's (GPUBENCH_NVCC, set by
// CMake where CUDA is found) in the test's directory, else the example is not run.
function nvcc(words, context) {
  const r = spawnSync(process.env.GPUBENCH_NVCC, words.slice(1), { cwd: context.cwd,
    encoding: 'utf8', timeout: 300_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`nvcc exit ${r.status}\n${r.stderr}`);
  const made = words.slice(1).filter((w, i, a) => a[i - 1] === '-o');
  const notes = [`nvcc is ${process.env.GPUBENCH_NVCC}`];
  for (const f of made) notes.push(`${f}: ${fs.statSync(path.join(context.cwd, f)).size} bytes`);
  return { output: r.stdout, notes };
}

// ---- The run ---------------------------------------------------------------------------------

function notRunReason(words) {
  const program = path.basename(words[0]);
  const reasons = {
    'quickstart.sh': 'installs packages and builds (what CI does before this test)',
    'test.sh': 'the test suite itself',
    docker: 'needs a Docker daemon (CI builds the Dockerfile with buildah: container_test)',
    buildah: 'CI runs it in scripts/container_test.sh',
    mmdebstrap: 'CI runs it in scripts/container_test.sh',
    ncu: 'needs a GPU and Nsight Compute',
    nsys: 'needs a GPU and Nsight Systems',
    gpubench_server: 'a server command (this test runs its own server)',
    kubectl: 'needs a Kubernetes cluster (kubernetes_manifests validates the files)',
    jq: 'reads a report of the fleet stack test',
  };
  if (program === 'nvcc' && !process.env.GPUBENCH_NVCC) return 'no CUDA toolkit (GPUBENCH_NVCC)';
  return reasons[program] ?? null;
}

async function startServer(dir) {
  const portFile = path.join(dir, 'port');
  const log = fs.openSync(path.join(dir, 'server.log'), 'w');
  const server = spawn(serverBinary, ['--backend=cpu', '--cpu_devices=2',
    '--listen=127.0.0.1:0', `--port_file=${portFile}`, '--metrics_listen=',
    '--default_min_time_seconds=0.01', '--default_timeout_seconds=0.25',
    '--node_name=readme-test', '--allow_user_kernels'], { stdio: ['ignore', log, log] });
  for (let i = 0; i < 300; ++i) {
    if (fs.existsSync(portFile) && fs.readFileSync(portFile, 'utf8').trim()) {
      return { server, port: Number(fs.readFileSync(portFile, 'utf8').trim()) };
    }
    if (server.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  server.kill('SIGKILL');
  throw new Error(`server did not start:\n${fs.readFileSync(path.join(dir, 'server.log'), 'utf8')}`);
}

// README.md, then docs/*.md in name order: [{name, markdown}].
function documents() {
  const docsDir = path.join(path.dirname(readmePath), 'docs');
  const names = fs.existsSync(docsDir)
    ? fs.readdirSync(docsDir).filter((f) => f.endsWith('.md')).sort().map((f) => path.join(docsDir, f))
    : [];
  return [readmePath, ...names].map((file) => ({
    name: path.relative(path.dirname(readmePath), file),
    markdown: fs.readFileSync(file, 'utf8'),
  }));
}

async function main() {
  const docs = documents();
  const markdown = docs.map((d) => d.markdown).join('\n');
  const commands = docs.flatMap((d) => extractCommands(d.markdown).map((c) => ({ ...c, file: d.name })));
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'gpubench-readme-'));
  const { server, port } = await startServer(cwd);
  const target = `127.0.0.1:${port}`;
  let failures = 0;
  let ran = 0;
  const notRun = [];
  try {
    const devices = runCli(['devices', '--format=json', `--target=${target}`], cwd);
    const uuid = JSON.parse(devices.stdout).devices[0].uuid;
    const context = { target, uuid, cwd };
    // What the fleet examples read: the README's plan, a targets file, last week's report.
    const plan = adaptBody(extractPlan(markdown), []);
    fs.writeFileSync(path.join(cwd, 'plan.json'), JSON.stringify(plan));
    fs.writeFileSync(path.join(cwd, 'user-plan.json'),
                     JSON.stringify(adaptBody(extractUserPlan(markdown), [])));
    fs.writeFileSync(path.join(cwd, 'nodes.txt'), `${target}\n`);
    const baseline = runCli(['fleet', '--plan=plan.json', `--dns=${target}`, '--format=json',
                             '--report_file=last-week.json', '--progress=false'], cwd);
    if (baseline.code !== 0) throw new Error(`the fleet baseline failed: ${baseline.stderr}`);

    for (const { file, line, text } of commands) {
      // Lines of text blocks (the architecture, a sample verdict) are not commands.
      const program = path.basename(text.split(/\s+/)[0]);
      const runnable = program === 'gpubench' || program === 'grpcurl' ||
          (program === 'nvcc' && process.env.GPUBENCH_NVCC);
      if (program === 'gpubench' && /--(ptx|cubin)=/.test(text) && !process.env.GPUBENCH_NVCC) {
        notRun.push(`${file}:${line}: ${text.slice(0, 70)} (its file is made by nvcc: no CUDA toolkit)`);
        continue;
      }
      if (!runnable) {
        const reason = notRunReason([program]);
        if (reason) notRun.push(`${file}:${line}: ${text.slice(0, 70)} (${reason})`);
        continue;
      }
      let words;
      try {
        words = shellWords(text);
      } catch (e) {
        console.log(`FAIL ${file}:${line}: ${text}\n  ${e.message}`);
        ++failures;
        continue;
      }
      ++ran;
      const started = Date.now();
      try {
        const { output, notes } =
            program === 'grpcurl' ? await grpcurl(words.slice(1), context)
            : program === 'nvcc' ? nvcc(words, context) : gpubench(words, context);
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        console.log(`ok   ${file}:${line} (${seconds} s): ${text}`);
        for (const note of notes) console.log(`       adapted: ${note}`);
        const shown = output.trimEnd().split('\n');
        for (const l of shown.slice(0, 4)) console.log(`       | ${l.slice(0, 140)}`);
        if (shown.length > 4) console.log(`       | ... (${shown.length} lines)`);
      } catch (e) {
        ++failures;
        console.log(`FAIL ${file}:${line}: ${text}\n  ${String(e.message ?? e).replace(/\n/g, '\n  ')}`);
      }
    }
  } finally {
    server.kill('SIGTERM');
  }
  console.log(`\nnot run (${notRun.length}):`);
  for (const n of notRun) console.log(`  ${n}`);
  const perFile = {};
  for (const c of commands) perFile[c.file] = (perFile[c.file] ?? 0) + 1;
  console.log(`\ncode lines per file: ${JSON.stringify(perFile)}`);
  console.log(`\n${ran} examples of ${docs.length} files run, ${failures} failed`);
  if (ran < 20) {
    console.log('expected at least 20 runnable examples: did the docs\' code blocks move?');
    process.exit(1);
  }
  process.exit(failures ? 1 : 0);
}

await main();
