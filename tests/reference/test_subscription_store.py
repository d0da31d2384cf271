"""The FK join's subscription store: Kafka's CombinedKey byte layout and prefix-scan order."""
from kssim.reference.stores.subscription_store import SubscriptionStore, combined_key_bytes, prefix_bytes, store_key


def test_combined_key_layout_is_kafkas():
    # [4-byte big-endian length of the serialized FK][FK bytes][PK bytes] (CombinedKeySchema#toBytes)
    assert combined_key_bytes(b"fk", b"pk") == b"\x00\x00\x00\x02fkpk"
    assert prefix_bytes(b"x" * 300) == b"\x00\x00\x01\x2c" + b"x" * 300
    # string keys: the sort key is exactly the CombinedKey bytes
    assert store_key("fk", "pk") == b"\x00\x00\x00\x02fkpk"
    # an int FK is a LongSerializer's 8 bytes; keys of other types carry a type mark (0xFF, a letter)
    assert store_key(1, "k") == b"\xffi" + b"\x00\x00\x00\x08" + (1).to_bytes(8, "big") + b"k"
    assert store_key("f", 2) == b"\x00\x00\x00\x01f" + b"\xffi" + (2).to_bytes(8, "big")


def _pks(store, fk):
    return [entry[0] for _, entry in store.prefix_scan(fk)]


def test_prefix_scan_visits_subscribers_in_serialized_pk_byte_order():
    store = SubscriptionStore()
    for pk in ("p", "a", "z", "aa", "B"):
        store.put(store_key("x", pk), pk, 1)
    assert _pks(store, "x") == ["B", "a", "aa", "p", "z"]  # unsigned bytes: 'B' (0x42) < 'a' (0x61)


def test_int_pks_order_by_their_long_bytes_so_negatives_come_last():
    store = SubscriptionStore()
    for pk in (10, -1, 2, -5):
        store.put(store_key("x", pk), pk, 1)
    # two's complement big-endian, compared unsigned: 2 < 10 < -5 < -1
    assert _pks(store, "x") == [2, 10, -5, -1]


def test_prefix_scan_returns_only_that_fk():
    store = SubscriptionStore()
    store.put(store_key("a", "k1"), "k1@a", 1)
    store.put(store_key("ab", "k2"), "k2@ab", 1)  # "a" + PK "b..." would share bytes without the length
    store.put(store_key("b", "k3"), "k3@b", 1)
    assert _pks(store, "a") == ["k1@a"]
    assert _pks(store, "ab") == ["k2@ab"]
    assert _pks(store, "c") == []


def test_keys_of_different_types_stay_apart_even_with_equal_bytes():
    store = SubscriptionStore()
    store.put(store_key("\x01", "k"), "string fk", 1)
    store.put(store_key(True, "k"), "boolean fk", 1)  # both serialize to the byte 0x01
    assert _pks(store, "\x01") == ["string fk"]
    assert _pks(store, True) == ["boolean fk"]
    store.put(store_key("x", "\x01"), "string pk", 1)
    store.put(store_key("x", True), "boolean pk", 1)
    assert _pks(store, "x") == ["string pk", "boolean pk"]


def test_put_overwrites_delete_removes_and_absent_delete_is_a_no_op():
    store = SubscriptionStore()
    key = store_key("x", "k")
    store.put(key, "v1", 1)
    store.put(key, "v2", 2)
    assert store.get(key) == ("v2", 2) and len(store) == 1
    store.delete(key)
    store.delete(key)
    assert store.get(key) is None and len(store) == 0
