// What both Node.js clients of `mta serve` share: the arguments (ADDRESS PROTO_DIR TOKEN),
// aggregation.proto loaded as a user in another language would, a client with the bearer
// token, and two helpers: `call` (a promise of a unary reply) and `refusal` (the status
// code and details of a call expected to fail, or null).
"use strict";
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");

const [address, protoDir, token] = process.argv.slice(2);
const definition = loader.loadSync("mta/v1/aggregation.proto",
  { includeDirs: [protoDir], keepCase: true, longs: Number, defaults: false, oneofs: true });
const mta = grpc.loadPackageDefinition(definition).mta.v1;
const client = new mta.Aggregation(address, grpc.credentials.createInsecure());
const metadata = new grpc.Metadata();
metadata.set("authorization", `Bearer ${token}`);

function call(method, request) {
  return new Promise((resolve, reject) =>
    client[method](request, metadata, (error, reply) => (error ? reject(error) : resolve(reply))));
}

async function refusal(method, request) {
  try {
    await call(method, request);
    return null;
  } catch (error) {
    return { code: grpc.status[error.code], details: error.details };
  }
}

module.exports = { client, metadata, call, refusal };
