from servlet.core.hashing import canonical_json, sha1_hex


def test_canonical_json_sorts_keys_without_whitespace_and_keeps_unicode() -> None:
    assert canonical_json({"b": [1, {"d": 2, "c": "ü"}], "a": None}) == '{"a":null,"b":[1,{"c":"ü","d":2}]}'


def test_sha1_hex_matches_the_known_digest_of_a_namespace() -> None:
    # sha1("default"), as `printf default | sha1sum` prints it
    assert sha1_hex("default") == "7505d64a54e061b7acd54ccd58b49dc43500b635"
