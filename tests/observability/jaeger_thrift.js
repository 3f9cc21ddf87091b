'use strict';
// Spans (JSON on stdin) -> Jaeger's Thrift model, with OpenTelemetry JS's own Jaeger exporter
// transform (@opentelemetry/exporter-jaeger `spanToThrift`), then encoded as a Jaeger `Batch` with
// Jaeger's IDL (jaeger-client's thriftrw codec) and decoded back: what a Jaeger collector would
// receive. Prints the decoded batch as JSON (ids and int64s as hex). Usage:
//   node jaeger_thrift.js NODE_MODULES_DIR < spans.json
const modules = process.argv[2];
const load = (name) => require(require.resolve(name, { paths: [modules] }));
const { spanToThrift } = load('@opentelemetry/exporter-jaeger/build/src/transform');
const { default: ThriftUtils } = load('jaeger-client/dist/src/thrift');

// Nanoseconds since the epoch (as a decimal string) -> OpenTelemetry's HrTime [s, ns].
const hrTime = (ns) => {
  const big = BigInt(ns);
  return [Number(big / 1000000000n), Number(big % 1000000000n)];
};

const toReadableSpan = (span) => ({
  name: span.name,
  kind: span.kind,
  spanContext: () => ({ traceId: span.traceId, spanId: span.spanId, traceFlags: 1 }),
  parentSpanContext: span.parentSpanId
    ? { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: 1 }
    : undefined,
  startTime: hrTime(span.startNs),
  endTime: hrTime(span.endNs),
  duration: hrTime((BigInt(span.endNs) - BigInt(span.startNs)).toString()),
  attributes: span.attributes,
  status: { code: span.statusCode, message: span.statusMessage || undefined },
  events: span.events.map((e) => ({ name: e.name, attributes: e.attributes, time: hrTime(e.timeNs) })),
  links: span.links.map((l) => ({ context: { traceId: l.traceId, spanId: l.spanId, traceFlags: 1 } })),
  resource: { attributes: span.resource },
  instrumentationScope: { name: span.scope, version: span.scopeVersion },
  droppedAttributesCount: 0,
  droppedEventsCount: 0,
  droppedLinksCount: 0,
});

const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const thrift = ThriftUtils._thrift;
const batch = new thrift.Batch({
  process: { serviceName: input.serviceName, tags: [] },
  spans: input.spans.map((s) => spanToThrift(toReadableSpan(s))),
});
const encoded = thrift.Batch.rw.toBuffer(batch);
if (encoded.err) throw encoded.err;
const decoded = thrift.Batch.rw.fromBuffer(encoded.value);
if (decoded.err) throw decoded.err;
const hex = (key, value) =>
  value && value.type === 'Buffer' && Array.isArray(value.data)
    ? Buffer.from(value.data).toString('hex')
    : value;
process.stdout.write(JSON.stringify(decoded.value, hex));
