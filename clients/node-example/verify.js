// Calling sgs-verify from another language: Node with @grpc/grpc-js, the service described by the
// project's .proto files (docs/other-languages.md). Verifies a log, lists the replays with one of its
// codes, then shows what two refusals look like. Prints one JSON object per step, for people and for
// tests/service/test_node_client.py.
//
//   node verify.js 127.0.0.1:50051 ../../docs/examples/second_slash.json
"use strict";

const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_ROOT = process.env.SGS_VERIFY_PROTO || path.join(__dirname, "..", "..", "proto");

function client(address) {
  const definition = protoLoader.loadSync(path.join(PROTO_ROOT, "sgsverify/v1/service.proto"), {
    includeDirs: [PROTO_ROOT],
    longs: String, // int64 (seed, log_size) as decimal strings, as in the JSON mapping
    enums: String, // enum values by name: "MODE_IDENTITY"
    defaults: true, // every field, default values too (created: false)
    oneofs: true,
  });
  const { VerifierService } = grpc.loadPackageDefinition(definition).sgsverify.v1;
  const metadata = new grpc.Metadata();
  if (process.env.SGS_VERIFY_TOKEN) metadata.set("authorization", `Bearer ${process.env.SGS_VERIFY_TOKEN}`);
  return { stub: new VerifierService(address, grpc.credentials.createInsecure()), metadata };
}

// A unary call as a promise; a refusal becomes {code, status, details} (the status name: INVALID_ARGUMENT).
function call(api, method, request) {
  return new Promise((resolve) => {
    api.stub[method](request, api.metadata, { deadline: Date.now() + 60_000 }, (err, response) => {
      if (err) resolve({ error: { code: err.code, status: grpc.status[err.code], details: err.details } });
      else resolve({ response });
    });
  });
}

async function main() {
  const [address = "127.0.0.1:50051", file = path.join(__dirname, "..", "..", "docs/examples/second_slash.json")] =
    process.argv.slice(2);
  const api = client(address);
  const out = (step, value) => console.log(JSON.stringify({ step, ...value }));

  // 1. The log as it is on disk (binary protobuf or its JSON mapping): `encoded_log`.
  const encoded = await call(api, "VerifyLog", {
    encodedLog: fs.readFileSync(file), metadata: { tournament: "node-example" }, summaryOnly: true,
  });
  if (encoded.error) return out("VerifyLog encoded_log", encoded), 1;
  const info = encoded.response.info;
  out("VerifyLog encoded_log", { id: info.id, created: encoded.response.created, events: info.eventCount,
    violations: info.violationCount, codes: info.violationCodes, result: info.result });

  // 2. The same game as a message: the JSON file is the GameLog's JSON mapping, so it is the request's `log`.
  const asMessage = await call(api, "VerifyLog", { log: JSON.parse(fs.readFileSync(file, "utf8")), summaryOnly: true });
  if (asMessage.error) return out("VerifyLog log", asMessage), 1;
  out("VerifyLog log", { id: asMessage.response.info.id, created: asMessage.response.created,
    codes: asMessage.response.info.violationCodes });

  // 3. The stored replays with the log's first violation code.
  const code = info.violationCodes[0] || "SLASH_LIMIT";
  const listed = await call(api, "ListReplays", { violationCode: code, pageSize: 5 });
  if (listed.error) return out("ListReplays", listed), 1;
  out("ListReplays", { code, total: listed.response.totalCount, ids: listed.response.replays.map((r) => r.id) });

  // 4. Refusals: a code that is not in the catalogue, a replay that is not stored.
  out("ListReplays unknown code", await call(api, "ListReplays", { violationCode: code.toLowerCase() }));
  out("GetReplay unknown id", await call(api, "GetReplay", { id: "0".repeat(64) }));
  api.stub.close();
  return 0;
}

main().then((code) => { process.exitCode = code; }, (err) => { console.error(err); process.exitCode = 2; });
