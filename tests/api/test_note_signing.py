"""Signing over the real API: flagged sentences are decided one by one, edits are checked again, and only a
trainee's named supervisor reads and co-signs the trainee's note (issue 23, items 1 and 2)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.api.conftest import Api
from tests.api.test_notes_api import DIALOGUE, H, audit_actions, drafted, sign_all
from tests.conftest import SAMPLES
from tests.factories import ready_session, token_for
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, NoteVersion


def _sections(note: dict[str, object]) -> list[dict[str, object]]:
    return [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]]}
            for s in note["sections"]]  # type: ignore[attr-defined, index]


def test_signing_asks_for_each_flagged_sentence_and_keeps_who_confirmed(api: Api, settings: Settings,
                                                                        alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, alice, sid)
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    sections = _sections(note)
    invented = "Client reports that they have never been able to sleep."
    uncited = "Client works as a nurse on night shifts."
    sections[0]["sentences"][0] = "Client reports that they fall asleep around three in the morning."  # type: ignore[index]
    sections[1]["sentences"] += [uncited]  # type: ignore[operator]
    sections[2]["sentences"].insert(0, invented)  # type: ignore[attr-defined]
    edited = api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice)).json()
    labels = {(s["name"], i): x["label"] for s in edited["sections"] for i, x in enumerate(s["sentences"])}
    assert labels[("Subjective", 0)] == "contradicted"

    asked = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice))
    assert asked.status_code == 409 and asked.json()["error"] == "needs_review", asked.text
    flagged = asked.json()["flagged"]
    where = {(f["section"], f["sentence"]): f["reason"] for f in flagged}
    assert where[("Subjective", 0)] == "contradicted"
    objective = len(sections[1]["sentences"]) - 1  # type: ignore[arg-type]
    assert ("Objective", objective) in where and ("Assessment", 0) in where
    assert "three in the morning" not in asked.text and "nurse" not in asked.text  # no note words in the error
    assert api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()["status"] == "draft"

    # Deciding only some of them is not enough; a decision on a sentence not flagged is refused.
    partial = {"confirm": [{"section": "Subjective", "sentence": 0}]}
    left = api.client.post(f"/v1/notes/{note_id}/sign", json=partial, headers=H(alice))
    assert left.status_code == 409 and ("Subjective", 0) not in {(f["section"], f["sentence"])
                                                                 for f in left.json()["flagged"]}
    supported = next((s["name"], i) for s in edited["sections"] for i, x in enumerate(s["sentences"])
                     if x["label"] == "supported" and x["citations"])
    wrong = {"confirm": [{"section": f["section"], "sentence": f["sentence"]} for f in flagged]
             + [{"section": supported[0], "sentence": supported[1]}]}
    assert api.client.post(f"/v1/notes/{note_id}/sign", json=wrong, headers=H(alice)).json()["error"] == "not_flagged"
    # …even when flagged sentences are still undecided (the wrong decision is said first), and one
    # sentence cannot be both confirmed and removed.
    alone = {"confirm": [{"section": supported[0], "sentence": supported[1]}]}
    answer = api.client.post(f"/v1/notes/{note_id}/sign", json=alone, headers=H(alice))
    assert answer.status_code == 422 and answer.json()["error"] == "not_flagged", answer.text
    first = {"section": flagged[0]["section"], "sentence": flagged[0]["sentence"]}
    both = {"confirm": [first], "remove": [first]}
    answer = api.client.post(f"/v1/notes/{note_id}/sign", json=both, headers=H(alice))
    assert answer.status_code == 422 and answer.json()["error"] == "conflicting_decision", answer.text
    stale = {"confirm": [], "version": 1}
    assert api.client.post(f"/v1/notes/{note_id}/sign", json=stale, headers=H(alice)).json()["error"] == \
        "version_moved"

    # Remove the invented one, keep the rest as written.
    decision = {"remove": [{"section": "Assessment", "sentence": 0}],
                "confirm": [{"section": f["section"], "sentence": f["sentence"]} for f in flagged
                            if (f["section"], f["sentence"]) != ("Assessment", 0)], "version": edited["version"]}
    signed = api.client.post(f"/v1/notes/{note_id}/sign", json=decision, headers=H(alice))
    assert signed.status_code == 200, signed.text
    body = signed.json()
    assert body["status"] == "signed" and body["version"] == edited["version"] + 1
    texts = [x["text"] for s in body["sections"] for x in s["sentences"]]
    assert invented not in texts and uncited in texts
    kept = body["sections"][0]["sentences"][0]
    assert kept["confirmed"]["by"] == body["signed_by"] and kept["confirmed"]["at"]
    with db_session(settings.database_url or "") as db:
        review = db.execute(select(NoteVersion).where(NoteVersion.note_id == uuid.UUID(note_id),
                                                      NoteVersion.version == body["version"])).scalar_one()
        assert review.kind == "review" and str(review.author_id) == body["signed_by"]
        detail = db.execute(select(AuditEntry.detail).where(AuditEntry.action == "note_signed")).scalar_one()
        assert detail["confirmed"] == len(flagged) - 1 and detail["removed"] == 1

    # The exported record carries neither the verifier's tags nor the confirmations.
    fhir = api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()
    doc = next(e["resource"] for e in fhir["entry"] if e["resource"]["resourceType"] == "DocumentReference")
    text = base64.b64decode(doc["content"][1]["attachment"]["data"]).decode()
    assert "three in the morning" in text and "[CONTRADICTED]" not in text and "[UNSUPPORTED]" not in text
    assert "confirm" not in text.lower() and body["signed_by"] not in text


def test_a_note_with_nothing_flagged_signs_in_one_step(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, alice, sid)
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    sections = [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]
                                                  if x["label"] == "supported" and x["citations"]]}
                for s in note["sections"]]
    api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice))
    r = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice))
    assert r.status_code == 200 and r.json()["status"] == "signed", r.text


def test_an_edit_runs_the_risk_check_again_on_the_edited_text(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, alice, sid)
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    assert note["risk"]["status"] == "none found"
    sections = _sections(note)
    sections[0]["sentences"].append("Client denies suicidal ideation.")  # type: ignore[attr-defined]
    edited = api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice)).json()
    risk = edited["risk"]
    assert risk["status"] == "found" and risk["flags"] == []  # the record's flags are the record's
    index = len(sections[0]["sentences"]) - 1  # type: ignore[arg-type]
    assert {"category": "suicide", "section": "Subjective", "sentence": index, "denied": True} in risk["note_mentions"]
    assert "checked" not in risk  # the box never says "nothing detected" over a note that speaks of risk
    page = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    assert page["risk"]["note_mentions"] == risk["note_mentions"]
    # Taking the words out again takes the mention out.
    sections[0]["sentences"].pop()  # type: ignore[attr-defined]
    again = api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice)).json()
    assert again["risk"]["status"] == "none found" and again["risk"]["note_mentions"] == []


def test_only_the_named_supervisor_reads_and_cosigns_a_trainees_note(api: Api, settings: Settings,
                                                                     alice: str) -> None:
    carol = token_for(settings, "Carol", "North Clinic")
    dave = token_for(settings, "Dave", "North Clinic")
    admin = token_for(settings, "", "North Clinic", scope="clinic_admin")
    staff = {t["name"]: t["id"] for t in api.client.get("/v1/clinic/therapists", headers=H(admin)).json()}

    # Only the clinic admin names a supervisor; a therapist's token sees no such API.
    assert api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}", json={"supervisor_id": staff["Carol"]},
                            headers=H(alice)).status_code == 404
    made = api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}", json={"supervisor_id": staff["Carol"]},
                            headers=H(admin))
    assert made.status_code == 200 and made.json()["requires_cosign"] is True, made.text
    assert made.json()["supervisor_id"] == staff["Carol"]
    cycle = api.client.patch(f"/v1/clinic/therapists/{staff['Carol']}", json={"supervisor_id": staff["Alice"]},
                             headers=H(admin))
    assert (cycle.status_code, cycle.json()["error"]) == (422, "supervision_cycle")
    own = api.client.patch(f"/v1/clinic/therapists/{staff['Carol']}", json={"supervisor_id": staff["Carol"]},
                           headers=H(admin))
    assert own.json()["error"] == "own_supervisor"
    other_clinic = token_for(settings, "Erin", "South Clinic", scope="therapist")
    del other_clinic
    south = token_for(settings, "", "South Clinic", scope="clinic_admin")
    assert api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}", json={"supervisor_id": None},
                            headers=H(south)).status_code == 404
    with db_session(settings.database_url or "") as db:
        rows = db.execute(select(AuditEntry.detail).where(AuditEntry.action == "therapist_updated")).scalars().all()
    assert rows == [{"therapist_id": staff["Alice"], "fields": ["supervisor_id"], "supervisor_id": staff["Carol"]}]

    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, alice, sid)
    assert api.client.get(f"/v1/notes/{note_id}", headers=H(carol)).status_code == 404  # a draft stays Alice's
    sign_all(api, alice, note_id)

    # Another therapist of the clinic neither reads nor co-signs it; nothing of the note is in the answer.
    for r in (api.client.get(f"/v1/notes/{note_id}", headers=H(dave)),
              api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(dave))):
        assert r.status_code == 404 and "sections" not in r.json()
    assert api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(alice)).json()["error"] == "own_note"

    read = api.client.get(f"/v1/notes/{note_id}", headers=H(carol))
    assert read.status_code == 200 and read.json()["sections"]
    done = api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol)).json()
    assert done["cosigned_by"] == staff["Carol"] and done["cosigned_at"]
    assert api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol)).status_code == 409
    assert {"note_read_supervisor", "note_cosigned"} <= set(audit_actions(settings))
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).status_code == 200

    # The trainee amends the co-signed note: the supervisor never read the change, so it waits for them again.
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    sections = _sections(note)
    sections[0]["sentences"][0] = "Client reports that they fall asleep around one in the morning."  # type: ignore[index]
    amended = _amend(api, alice, note_id, {"sections": sections, "reason": "Corrected the time"})
    assert amended.status_code == 200, amended.text
    assert amended.json()["cosigned_at"] is None and amended.json()["cosigned_by"] is None
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()["error"] == "awaiting_cosign"
    again = api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol))
    assert again.status_code == 200 and again.json()["cosigned_by"] == staff["Carol"], again.text
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).status_code == 200


def test_clinic_time_zone_and_how_exports_name_a_clinician(api: Api, settings: Settings, alice: str) -> None:
    admin = token_for(settings, "", "North Clinic", scope="clinic_admin")
    staff = {t["name"]: t["id"] for t in api.client.get("/v1/clinic/therapists", headers=H(admin)).json()}
    bad = api.client.patch("/v1/clinic", json={"time_zone": "Mars/Olympus"}, headers=H(admin))
    assert (bad.status_code, bad.json()["error"]) == (422, "unknown_time_zone")
    assert api.client.patch("/v1/clinic", json={"time_zone": "America/Chicago"}, headers=H(admin)).status_code == 200
    r = api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}",
                         json={"display_name": "Alice Moreno", "credentials": "LCSW"}, headers=H(admin))
    assert r.status_code == 200 and r.json()["display_name"] == "Alice Moreno" and r.json()["credentials"] == "LCSW"
    assert api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}", json={"display_name": "A\nB"},
                            headers=H(admin)).status_code == 422
    assert api.client.patch(f"/v1/clinic/therapists/{uuid.uuid4()}", json={"credentials": "PhD"},
                            headers=H(admin)).status_code == 404


def test_the_cli_names_a_supervisor_and_a_clinicians_export_name_audited(settings: Settings,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from verbatim import cli as verbatim_cli
    from verbatim.config import get_settings
    from verbatim.db.models import Clinic, Therapist

    token_for(settings, "Alice", "North Clinic")
    token_for(settings, "Carol", "North Clinic")
    # The real commands in this process (a subprocess per call is minutes on a loaded machine).
    # Both URLs, as an operator's shell has them (no stack.env: the command must not look for one).
    monkeypatch.setenv("VERBATIM_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("VERBATIM_REDIS_URL", settings.redis_url or "")
    get_settings.cache_clear()
    runner = CliRunner()

    class Done:
        def __init__(self, code: int, out: str):
            self.returncode, self.stdout, self.stderr = code, out, ""

    def cli(*args: str) -> Done:
        r = runner.invoke(verbatim_cli.app, ["clinic", *args, "--clinic", "North Clinic"])
        return Done(r.exit_code, r.output)

    for supervisor in ("Nobody", "Alice"):  # no such therapist; the trainee themself
        done = cli("supervisor", "--trainee", "Alice", "--supervisor", supervisor)
        assert done.returncode == 2, done.stdout
    done = cli("supervisor", "--trainee", "Alice", "--supervisor", "Carol")
    assert done.returncode == 0, done.stdout + done.stderr
    assert cli("therapist", "--name", "Carol", "--display-name", "Carol Diaz", "--credentials", "PhD").returncode == 0
    assert cli("time-zone", "Mars/Olympus").returncode == 2
    assert cli("time-zone", "Europe/Berlin").returncode == 0
    with db_session(settings.database_url or "") as db:
        staff = {t.name: t for t in db.execute(select(Therapist)).scalars()}
        assert staff["Alice"].supervisor_id == staff["Carol"].id and staff["Alice"].requires_cosign
        assert (staff["Carol"].display_name, staff["Carol"].credentials) == ("Carol Diaz", "PhD")
        assert db.execute(select(Clinic.time_zone).where(Clinic.name == "North Clinic")).scalar_one() == \
            "Europe/Berlin"
        rows = db.execute(select(AuditEntry.action, AuditEntry.detail).order_by(AuditEntry.id)).all()
    get_settings.cache_clear()
    assert [a for a, _ in rows] == ["therapist_updated", "therapist_updated", "clinic_updated"]
    assert rows[0][1]["supervisor_id"] == str(staff["Carol"].id) and "Carol" not in str(rows)


def _signed(api: Api, settings: Settings, token: str, turns: Path | None = None) -> dict[str, Any]:
    sid = ready_session(settings, turns or DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, token, sid)
    sign_all(api, token, note_id)
    return dict(api.client.get(f"/v1/notes/{note_id}", headers=H(token)).json())


def _versions(settings: Settings, note_id: str) -> list[int]:
    with db_session(settings.database_url or "") as db:
        return list(db.execute(select(NoteVersion.version).where(NoteVersion.note_id == uuid.UUID(note_id))
                               .order_by(NoteVersion.version)).scalars())


def test_an_amendment_asks_for_a_decision_on_each_doubtful_sentence_it_changes(api: Api, settings: Settings,
                                                                               alice: str) -> None:
    note = _signed(api, settings, alice)
    note_id = str(note["id"])
    before = _versions(settings, note_id)
    sections = _sections(note)
    invented = "Client reports that they have always slept through the night."
    added = "Client started a new job as a pilot."
    sections[0]["sentences"][0] = invented  # type: ignore[index]
    sections[1]["sentences"].append(added)  # type: ignore[attr-defined]
    body = {"sections": sections, "reason": "Corrected the sleep history", "version": note["version"]}

    asked = api.client.post(f"/v1/notes/{note_id}/amend", json=body, headers=H(alice))
    assert asked.status_code == 409 and asked.json()["error"] == "needs_review", asked.text
    where = {(f["section"], f["sentence"]) for f in asked.json()["flagged"]}
    last = len(sections[1]["sentences"]) - 1  # type: ignore[arg-type]
    # Only what the amendment changed is asked about: the signed sentences were decided at signing.
    assert where == {(sections[0]["name"], 0), (sections[1]["name"], last)}, where
    assert "slept through" not in asked.text and "pilot" not in asked.text
    assert _versions(settings, note_id) == before  # nothing saved while undecided

    unchanged = {"section": sections[2]["name"], "sentence": 0}
    wrong = api.client.post(f"/v1/notes/{note_id}/amend", json={**body, "confirm": [unchanged]}, headers=H(alice))
    assert (wrong.status_code, wrong.json()["error"]) == (422, "not_flagged"), wrong.text
    moved = api.client.post(f"/v1/notes/{note_id}/amend", json={**body, "version": note["version"] + 5},
                            headers=H(alice))
    assert (moved.status_code, moved.json()["error"]) == (409, "version_moved")

    decided = {**body, "confirm": [{"section": sections[0]["name"], "sentence": 0}],
               "remove": [{"section": sections[1]["name"], "sentence": last}]}
    r = api.client.post(f"/v1/notes/{note_id}/amend", json=decided, headers=H(alice))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"] == "signed" and out["amended"] is True and out["version"] == note["version"] + 1
    texts = [x["text"] for s in out["sections"] for x in s["sentences"]]
    assert invented in texts and added not in texts
    kept = out["sections"][0]["sentences"][0]
    assert kept["confirmed"]["by"] == out["signed_by"]
    with db_session(settings.database_url or "") as db:
        detail = db.execute(select(AuditEntry.detail).where(AuditEntry.action == "note_amended")).scalar_one()
    assert detail["confirmed"] == 1 and detail["removed"] == 1
    # The exported record shows the amendment, never the confirmation.
    fhir = api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()
    doc = next(e["resource"] for e in fhir["entry"] if e["resource"]["resourceType"] == "DocumentReference")
    text = base64.b64decode(doc["content"][1]["attachment"]["data"]).decode()
    assert "slept through the night" in text and "confirm" not in text.lower() and "[UNSUPPORTED]" not in text


#: a signed note quoting a client's statement about risk ("I think about killing myself")
RISKY = SAMPLES / "notes" / "risk_in_signed_note.json"


def _amend(api: Api, token: str, note_id: str, body: dict[str, Any]) -> Any:
    """Send an amendment, keeping as written each changed sentence it is asked about (never acknowledging
    a risk removal: that is the caller's to say)."""
    r = api.client.post(f"/v1/notes/{note_id}/amend", json=body, headers=H(token))
    if r.status_code == 409 and r.json()["error"] == "needs_review":
        keep = [{"section": f["section"], "sentence": f["sentence"]} for f in r.json()["flagged"]]
        r = api.client.post(f"/v1/notes/{note_id}/amend", json={**body, "confirm": keep}, headers=H(token))
    return r


def test_an_amendment_that_changes_what_the_note_said_about_risk_is_saved_only_when_each_is_acknowledged(
        api: Api, settings: Settings, alice: str) -> None:
    note = _signed(api, settings, alice, RISKY)
    note_id = str(note["id"])
    assert [f["category"] for f in note["risk"]["flags"]] == ["suicide"]
    said = [(s["name"], i) for s in note["sections"] for i, x in enumerate(s["sentences"])
            if "killing myself" in x["text"]]
    assert said, note["sections"]  # the draft quotes what the client said
    name, index = said[0]
    sections = _sections(note)
    others = [s for s in sections if s["name"] != name]

    def with_risk_sentence(text: str | None, extra: str | None = None) -> list[dict[str, object]]:
        out = [dict(s) for s in sections]
        part = next(s for s in out if s["name"] == name)
        part["sentences"] = [t for i, t in enumerate(part["sentences"]) if i != index] if text is None else [  # type: ignore[arg-type]
            text if i == index else t for i, t in enumerate(part["sentences"])]  # type: ignore[arg-type]
        if extra:
            part["sentences"] = [*part["sentences"], extra]  # type: ignore[misc]
        return out

    # Moved word for word to another section, the statement is still there: nothing to acknowledge.
    quoted = next(x["text"] for s in note["sections"] for x in s["sentences"] if "killing myself" in x["text"])
    moved = [dict(s) for s in with_risk_sentence(None)]
    if others:
        target = next(s for s in moved if s["name"] == others[0]["name"])
        target["sentences"] = [*target["sentences"], quoted]  # type: ignore[misc]
        r = _amend(api, alice, note_id, {"sections": moved, "reason": "Moved to where it belongs"})
        assert r.status_code == 200, r.text
        note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
        name, index = next((s["name"], i) for s in note["sections"] for i, x in enumerate(s["sentences"])
                           if x["text"] == quoted)
        sections = _sections(note)

    # Reworded, turned into a denial in the note's shorthand, swapped for someone else's suicide, or taken out:
    # each is asked about (whether the new words still say it is the clinician's reading), and nothing is saved.
    versions = _versions(settings, note_id)
    attempts = [with_risk_sentence("Client reports thinking about killing themself on some nights."),
                with_risk_sentence("SI denied."), with_risk_sentence("Client no longer reports SI."),
                with_risk_sentence(None, "Client's aunt died by suicide years ago."), with_risk_sentence(None)]
    for attempt in attempts:
        r = _amend(api, alice, note_id, {"sections": attempt, "reason": "Tidied the note"})
        assert r.status_code == 409 and r.json()["error"] == "removes_risk", r.text
        assert {"section": name, "sentence": index, "category": "suicide", "denied": False} in r.json()["risk_removed"]
        assert "denied." not in r.text and "killing" not in r.text  # no note words in the error (categories only)
    assert _versions(settings, note_id) == versions

    # Acknowledging another sentence does not cover this one; naming it does.
    elsewhere = {"section": name, "sentence": index + 1}
    still = _amend(api, alice, note_id, {"sections": attempts[1], "reason": "Tidied the note",
                                         "risk_acknowledged": [elsewhere]})
    assert still.status_code == 409 and still.json()["error"] == "removes_risk", still.text
    sure = _amend(api, alice, note_id, {"sections": attempts[1], "reason": "Tidied the note",
                                        "risk_acknowledged": [{"section": name, "sentence": index}]})
    assert sure.status_code == 200, sure.text
    # The record's own flag stays in the risk box: an amendment changes the note, not the record.
    assert sure.json()["risk"]["flags"] == note["risk"]["flags"]
    with db_session(settings.database_url or "") as db:
        details = list(db.execute(select(AuditEntry.detail).where(AuditEntry.action == "note_amended")
                                  .order_by(AuditEntry.id)).scalars())
    assert details[-1]["risk_removed"] == 1 and all("risk_removed" not in d for d in details[:-1])
