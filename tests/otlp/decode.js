// SPDX-License-Identifier: MIT
// Decodes OTLP/JSON lines (one ExportLogsServiceRequest each, stdin) with protobuf.js and the
// message code the OpenTelemetry project generates from its official proto definitions
// (opentelemetry-proto, shipped in @opentelemetry/otlp-transformer). Each line goes JSON ->
// message (fromObject) -> protobuf wire bytes -> message (decode) -> OTLP/JSON (toObject with
// 64-bit integers as strings, enums as numbers) and must come back equal to what was read: a
// field the proto does not have, a misspelt name, a number where the proto wants a decimal
// string, or a value of the wrong kind does not survive the trip. Prints one decoded request per
// line on stdout; exits 1 at the first line that fails, naming it and the first difference.
"use strict";

const path = require("path");
const readline = require("readline");

const modules = process.argv[2];
if (!modules) {
        console.error("usage: node decode.js NODE_MODULES_DIR < lines");
        process.exit(2);
}
const root = require(path.join(modules, "@opentelemetry/otlp-transformer/build/src/generated/root.js"));
const protobuf = require(path.join(modules, "protobufjs/minimal"));
const Request = root.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;

if (!protobuf.util.Long) {
        console.error("protobuf.js has no Long support: 64-bit integers would lose precision");
        process.exit(2);
}

// Repeated fields: OTLP/JSON may write an empty one as [] or leave it out.
function normalize(v) {
        if (Array.isArray(v))
                return v.map(normalize);
        if (v && typeof v === "object") {
                const out = {};
                for (const k of Object.keys(v).sort()) {
                        if (Array.isArray(v[k]) && v[k].length === 0)
                                continue;
                        out[k] = normalize(v[k]);
                }
                return out;
        }
        return v;
}

function firstDifference(a, b, where) {
        if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
                return `${where}: ${JSON.stringify(a)} became ${JSON.stringify(b)}`;
        if (a && typeof a === "object") {
                const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
                for (const k of keys) {
                        if (!(k in b))
                                return `${where}.${k}: not a field of the proto message (lost in decoding)`;
                        if (!(k in a))
                                return `${where}.${k}: appeared in decoding`;
                        const d = firstDifference(a[k], b[k], `${where}.${k}`);
                        if (d)
                                return d;
                }
                return null;
        }
        return a === b ? null : `${where}: ${JSON.stringify(a)} became ${JSON.stringify(b)}`;
}

let n = 0;
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
        if (line === "")
                return;
        n++;
        let decoded;
        try {
                const read = JSON.parse(line);
                const bytes = Request.encode(Request.fromObject(read)).finish();
                decoded = Request.toObject(Request.decode(bytes), { longs: String, enums: Number, bytes: String });
                const d = firstDifference(normalize(read), normalize(decoded), "request");
                if (d)
                        throw new Error(d);
        } catch (e) {
                console.error(`line ${n}: ${e.message}`);
                process.exit(1);
        }
        process.stdout.write(JSON.stringify(decoded) + "\n");
});
rl.on("close", () => console.error(`${n} lines decoded`));
