import attrs

from servlet.core.model import LabelSelector, Problem, ServletIdentity


def test_label_selector_accepts_a_dict_pairs_or_nothing_and_compares_by_content() -> None:
    assert LabelSelector().match_labels == ()
    from_dict = LabelSelector(match_labels={"b": "2", "a": "1"})
    assert from_dict == LabelSelector(match_labels=(("a", "1"), ("b", "2")))
    assert attrs.evolve(from_dict) == from_dict
    assert hash(from_dict) == hash(attrs.evolve(from_dict))


def test_problem_reads_as_field_then_message() -> None:
    assert str(Problem(field="spec.naming.name", message="unknown placeholder $remoteNme")) == (
        "spec.naming.name: unknown placeholder $remoteNme"
    )


def test_servlet_fq_name_joins_name_and_api_group() -> None:
    assert ServletIdentity(name="tom", api_group="certificates.example.corp").fq_name == "tom.certificates.example.corp"
