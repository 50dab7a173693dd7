"""Regenerates the golden batches in this folder with kafka-python's own batch builder.

kafka-python's KafkaProducer builds every RecordBatch v2 with DefaultRecordBatchBuilder; calling
it directly gives the exact bytes a producer would send, with fixed timestamps. Run:
    pip install kafka-python==3.0.12 lz4 zstandard python-snappy
    python3 kafka_python_batches.py
"""
from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
RECORDS = [
    # (timestamp ms, key, value, headers)
    (1796011734556, b"k1", b"hello", []),
    (1796011734557, None, b"world", [("h1", b"v1"), ("h1", None)]),
    (1796011734550, b"k3", None, []),
    # Repetitive enough that every codec shrinks the payload (kafka-python sends a batch
    # uncompressed when compression does not help).
    (1796011734560, b"k4", b"abcdefgh" * 16, []),
]

for name, codec in CODECS.items():
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset, (ts, key, value, headers) in enumerate(RECORDS):
        builder.append(offset, ts, key, value, headers)
    with open(f"kafka-python-{name}.bin", "wb") as f:
        f.write(bytes(builder.build()))
