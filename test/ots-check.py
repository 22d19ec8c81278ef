"""The reference OpenTimestamps library (Debian's python3-opentimestamps, python3-bitcoinlib) run for
the tests of src/core/opentimestamps.ts and test/ots-calendar.ts. Run with the system interpreter:

    /usr/bin/python3 test/ots-check.py MODE < request.json > answer.json

MODE is one of
  check        read .ots files, compare their file digest, list and verify their attestations
  reserialize  read timestamps (or .ots files) and write them again
  write        write sample timestamps with every operation and attestation kind
  calendar     submit a digest to a calendar, or ask it for a commitment's timestamp
"""

import json
import sys
import warnings

from bitcoin.core import CBlockHeader
from opentimestamps.calendar import CommitmentNotFoundError, RemoteCalendar
from opentimestamps.core.dubious.notary import EthereumBlockHeaderAttestation
from opentimestamps.core.notary import (
    BitcoinBlockHeaderAttestation,
    LitecoinBlockHeaderAttestation,
    PendingAttestation,
    UnknownAttestation,
    VerificationError,
)
from opentimestamps.core.op import (
    OpAppend,
    OpHexlify,
    OpKECCAK256,
    OpPrepend,
    OpReverse,
    OpRIPEMD160,
    OpSHA1,
    OpSHA256,
)
from opentimestamps.core.serialize import BytesDeserializationContext, BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

# OpReverse warns that it may be removed one day; the warning is not an answer.
warnings.simplefilter("ignore")


def serialized(thing):
    ctx = BytesSerializationContext()
    thing.serialize(ctx)
    return ctx.getbytes()


def describe(attestation):
    if isinstance(attestation, PendingAttestation):
        return {"kind": "pending", "uri": attestation.uri}
    if isinstance(attestation, BitcoinBlockHeaderAttestation):
        return {"kind": "bitcoin", "height": attestation.height}
    payload = BytesSerializationContext()
    attestation._serialize_payload(payload)
    return {"kind": "unknown", "tag": attestation.TAG.hex(), "payload": payload.getbytes().hex()}


def attestations(timestamp):
    return [dict(msg=msg.hex(), **describe(a)) for msg, a in timestamp.all_attestations()]


def check(request):
    """Each file: its digest against the content hash, each attestation, Bitcoin ones verified."""
    headers = request["headers"]
    answers = []
    for item in request["files"]:
        with open(item["path"], "rb") as f:
            try:
                detached = DetachedTimestampFile.deserialize(BytesDeserializationContext(f.read()))
            except Exception as error:
                answers.append({"error": "%s: %s" % (type(error).__name__, error)})
                continue
        found = []
        for msg, attestation in detached.timestamp.all_attestations():
            entry = dict(msg=msg.hex(), **describe(attestation))
            header = headers.get(str(entry.get("height")))
            if entry["kind"] == "bitcoin" and header is not None:
                block = CBlockHeader.deserialize(bytes.fromhex(header))
                try:
                    entry["time"] = attestation.verify_against_blockheader(msg, block)
                    entry["verified"] = True
                except VerificationError as error:
                    entry["verified"] = False
                    entry["error"] = str(error)
            found.append(entry)
        answers.append(
            {
                "hashOp": detached.file_hash_op.TAG_NAME,
                "digest": detached.file_digest.hex(),
                "digestMatches": detached.file_digest == bytes.fromhex(item["contentHash"]),
                "attestations": found,
            }
        )
    return answers


def reserialize(request):
    """Each item: read as the reference reads it (to the end of the bytes), then written again."""
    answers = []
    for item in request:
        ctx = BytesDeserializationContext(bytes.fromhex(item["bytes"]))
        try:
            if item.get("detached"):
                timestamp = DetachedTimestampFile.deserialize(ctx)
                answers.append({"bytes": serialized(timestamp).hex(), "attestations": attestations(timestamp.timestamp)})
            else:
                timestamp = Timestamp.deserialize(ctx, bytes.fromhex(item["msg"]))
                ctx.assert_eof()
                answers.append({"bytes": serialized(timestamp).hex(), "attestations": attestations(timestamp)})
        except Exception as error:
            answers.append({"error": "%s: %s" % (type(error).__name__, error)})
    return answers


def write(_request):
    """Timestamps made by the reference: every operation, every attestation kind, shared paths."""
    digest = OpSHA256()(b"hashproof")
    root = Timestamp(digest)
    kinds = [
        (OpAppend(b"\x01\x02\x03"), PendingAttestation("https://alice.btc.calendar.opentimestamps.org")),
        (OpPrepend(b"\xff" * 40), BitcoinBlockHeaderAttestation(358391)),
        (OpSHA256(), LitecoinBlockHeaderAttestation(1234567)),
        (OpSHA1(), EthereumBlockHeaderAttestation(4000000)),
        (OpRIPEMD160(), UnknownAttestation(bytes.fromhex("0102030405060708"), b"payload")),
        (OpHexlify(), BitcoinBlockHeaderAttestation(0)),
        (OpReverse(), PendingAttestation("http://127.0.0.1:8080")),
        (OpKECCAK256(), UnknownAttestation(bytes.fromhex("ffffffffffffffff"), b"")),
    ]
    for op, attestation in kinds:
        node = root.ops.add(op)
        node.attestations.add(attestation)
        deeper = node.ops.add(OpSHA256()).ops.add(OpAppend(b"\x00" * 16)).ops.add(OpSHA256())
        deeper.attestations.add(BitcoinBlockHeaderAttestation(2**40))
        deeper.attestations.add(PendingAttestation("https://b.pool.opentimestamps.org"))
    root.attestations.add(PendingAttestation("https://a.pool.opentimestamps.org"))
    chain = Timestamp(digest)
    node = chain
    for i in range(200):
        node = node.ops.add(OpPrepend(bytes([i % 255 + 1])) if i % 3 else OpSHA256())
    node.attestations.add(BitcoinBlockHeaderAttestation(1))
    samples = [("every-kind", root), ("long-chain", chain)]
    answers = [{"name": n, "msg": digest.hex(), "bytes": serialized(t).hex(), "attestations": attestations(t)} for n, t in samples]
    detached = DetachedTimestampFile(OpSHA256(), root)
    answers.append({"name": "detached", "msg": digest.hex(), "bytes": serialized(detached).hex(), "attestations": attestations(root)})
    return answers


def calendar(request):
    """The reference's calendar client against a calendar: submit a digest, or ask for a commitment."""
    remote = RemoteCalendar(request["url"])
    if "digest" in request:
        timestamp = remote.submit(bytes.fromhex(request["digest"]), timeout=10)
        return {"bytes": serialized(timestamp).hex(), "attestations": attestations(timestamp)}
    try:
        timestamp = remote.get_timestamp(bytes.fromhex(request["commitment"]), timeout=10)
    except CommitmentNotFoundError as error:
        return {"notFound": error.reason}
    return {"bytes": serialized(timestamp).hex(), "attestations": attestations(timestamp)}


MODES = {"check": check, "reserialize": reserialize, "write": write, "calendar": calendar}

if __name__ == "__main__":
    json.dump(MODES[sys.argv[1]](json.load(sys.stdin)), sys.stdout)
