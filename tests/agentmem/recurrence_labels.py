"""A labelled set for consolidation's recurrence by meaning (issue 29): 153 pairs of turns
from the dev halves only (LoCoMo dev, conversations 0-4; LongMemEval_S dev, the user turns
of up to 400 characters of its first 4,000 sessions), every pair within one scope (a
LoCoMo conversation; LongMemEval's pool) whose MiniLM cosine is >= 0.868, whose
``guards.signature`` keys are equal and that share a content word, and whose word sets
are not already near-duplicates (Jaccard < 0.85: today's rule finds those): all such
pairs from 0.9 up (88) and the top 65 below it. Exact re-sends of one text (LongMemEval
repeats sessions across haystacks) are counted once.

Labelled by hand: ``True`` when the two say the same thing about the speaker (the same
fact, plan, request or pleasantry; one may add a detail to it), ``False`` when they
differ in what they state ("vegan recipes" / "vegan breakfast ideas", a different
object or action) or are said by different speakers. Only ids are kept here; the texts
are read in place from ``../shared/data/`` (never copied), a LoCoMo turn as
``"{speaker}: {text}"`` (the benchmark's protocol).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
LOCOMO = DATA / "locomo-dev" / "locomo-dev.json"
LONGMEMEVAL = DATA / "longmemeval-dev" / "sessions.jsonl.gz"


def turns(ids: set[str]) -> dict[str, tuple[str, str]]:
    """(text, speaker) of each id (``locomo:<sample>:<dia_id>`` or
    ``lme:<session>:<turn index>``), read from the dev data."""
    out: dict[str, tuple[str, str]] = {}
    for item in json.loads(LOCOMO.read_text()):
        for key, session in item["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                for t in session:
                    ident = f"locomo:{item['sample_id']}:{t['dia_id']}"
                    if ident in ids:
                        out[ident] = (f"{t['speaker']}: {t['text']}", t["speaker"])
    sessions = {i.split(":")[1] for i in ids if i.startswith("lme:")}
    with gzip.open(LONGMEMEVAL, "rt") as f:
        for line in f:
            s = json.loads(line)
            if s["session_id"] in sessions:
                for j, t in enumerate(s["turns"]):
                    ident = f"lme:{s['session_id']}:{j}"
                    if ident in ids:
                        out[ident] = (t["content"].strip(), t["role"])
    return out


LABELS: list[tuple[str, str, bool]] = [
    ("lme:40c77045:0", "lme:8d0b4363:0", True),
    ("lme:25e5b797_1:6", "lme:25e5b797_1:10", True),
    ("lme:53ab4734:0", "lme:85d6d348:0", True),
    ("lme:60d4332d:0", "lme:85d6d348:0", True),
    ("lme:b2b3936f_2:8", "lme:b2b3936f_2:10", True),
    ("lme:answer_c44b9df4_1:6", "lme:answer_c44b9df4_1:8", True),
    ("lme:53ab4734:0", "lme:60d4332d:0", True),
    ("lme:9c46fb6a:0", "lme:c3d89115:0", True),
    ("lme:5767bad6:2", "lme:5767bad6:10", True),
    ("lme:212ce1f4_2:8", "lme:212ce1f4_2:10", True),
    ("lme:41782aae_1:4", "lme:41782aae_1:6", True),
    ("lme:4f435d20_1:6", "lme:4f435d20_2:4", True),
    ("lme:beba4e74:6", "lme:beba4e74:8", True),
    ("lme:0b7d5ed2:8", "lme:0b7d5ed2:10", True),
    ("lme:9c05acfe_2:8", "lme:9c05acfe_2:10", True),
    ("lme:aa312a08:6", "lme:answer_f25c32f5_2:0", True),
    ("lme:85736a07_1:8", "lme:85736a07_1:10", True),
    ("locomo:conv-30:D7:15", "locomo:conv-30:D19:11", True),
    ("lme:21ef2d05_2:0", "lme:3753e55f_2:4", True),
    ("locomo:conv-42:D11:19", "locomo:conv-42:D14:27", True),
    ("lme:4cb33063:6", "lme:aa47b0c7_1:10", True),
    ("lme:answer_d6d2eba8_1:6", "lme:answer_d6d2eba8_2:4", True),
    ("lme:b70358bc_1:4", "lme:b70358bc_1:6", True),
    ("lme:9b90460f_3:8", "lme:9b90460f_3:10", True),
    ("lme:bd8e7b9a_1:8", "lme:bd8e7b9a_1:10", True),
    ("lme:be9ef406:8", "lme:be9ef406:10", True),
    ("locomo:conv-30:D17:14", "locomo:conv-30:D19:11", True),
    ("locomo:conv-42:D11:19", "locomo:conv-42:D25:29", False),
    ("lme:65698aa9_7:6", "lme:65698aa9_7:10", True),
    ("lme:answer_661b711f_1:0", "lme:answer_661b711f_2:0", True),
    ("lme:465e7ef9:6", "lme:465e7ef9:8", True),
    ("lme:242eab28_2:6", "lme:242eab28_2:8", True),
    ("lme:33a39aa7_2:6", "lme:33a39aa7_2:8", False),
    ("lme:answer_544fe66c_2:4", "lme:answer_544fe66c_2:10", True),
    ("lme:5a81277c:8", "lme:answer_0250ae1c:2", True),
    ("locomo:conv-41:D17:15", "locomo:conv-41:D28:7", True),
    ("lme:04bf1261:4", "lme:837f258b:4", True),
    ("lme:79d53fd0_2:8", "lme:79d53fd0_2:10", True),
    ("lme:9b2f4dd7_2:4", "lme:9b2f4dd7_2:6", True),
    ("lme:31829c1b_1:8", "lme:bdb49a42_2:0", True),
    ("lme:44837adb:0", "lme:answer_447052a5_2:0", True),
    ("lme:answer_c44b9df4_1:8", "lme:answer_c44b9df4_1:10", True),
    ("lme:0375c290:4", "lme:1b474144:8", True),
    ("lme:3d72c0c0:0", "lme:44837adb:0", True),
    ("lme:52d46b4a_1:4", "lme:52d46b4a_1:6", True),
    ("lme:2dbfff2f:10", "lme:a07f9d5c_2:6", True),
    ("lme:05b64314_2:0", "lme:2bd9990a_3:2", True),
    ("lme:18807892_4:6", "lme:9b1d5656_1:2", True),
    ("lme:9274be90_2:6", "lme:9274be90_2:10", False),
    ("lme:1503a6e0:0", "lme:77a26018:0", True),
    ("lme:0375c290:4", "lme:af843d70:0", True),
    ("lme:37beb8da:0", "lme:73e0e454:0", False),
    ("lme:3a1ea336_4:0", "lme:3a1ea336_4:10", True),
    ("lme:48ad2a93:4", "lme:answer_cdbe2250_2:0", True),
    ("lme:35201d43:10", "lme:40d74f35_2:2", True),
    ("lme:743f03a1_abs_1:4", "lme:answer_728deb4d_1:10", True),
    ("lme:7accf10d:8", "lme:7accf10d:10", False),
    ("lme:64071e19_2:2", "lme:c87e6c56:0", False),
    ("lme:09438306_2:8", "lme:a849dd16:2", True),
    ("lme:27b04adf:8", "lme:27b04adf:10", True),
    ("lme:3070419a_1:6", "lme:9793daa3_2:4", True),
    ("lme:37beb8da:0", "lme:64071e19_2:2", False),
    ("lme:2f919734:6", "lme:9e7446eb:6", True),
    ("lme:4f90c2e7:4", "lme:af843d70:0", True),
    ("locomo:conv-42:D1:1", "locomo:conv-42:D2:2", True),
    ("lme:b2fa108b_1:4", "lme:b42cbaf0_1:4", True),
    ("locomo:conv-30:D7:15", "locomo:conv-30:D17:14", True),
    ("lme:93f2334f_1:4", "lme:93f2334f_1:8", False),
    ("lme:35201d43:2", "lme:40d74f35_2:2", True),
    ("lme:1692563c_2:8", "lme:1692563c_2:10", True),
    ("lme:9daf69c1:10", "lme:a4d6c239_2:6", True),
    ("lme:1b474144:8", "lme:af843d70:0", True),
    ("lme:4e13f85f_2:8", "lme:4e13f85f_2:10", True),
    ("lme:35f052f9_2:8", "lme:35f052f9_2:10", True),
    ("lme:2d42bf5f_3:6", "lme:2d42bf5f_3:8", True),
    ("lme:b417603c_1:8", "lme:b417603c_1:10", False),
    ("locomo:conv-30:D12:16", "locomo:conv-30:D14:13", True),
    ("lme:0232f77d:0", "lme:6ade84f0:8", True),
    ("lme:84f80d64:0", "lme:a21c4257:0", True),
    ("lme:4f8caea3_2:6", "lme:4f8caea3_2:8", True),
    ("lme:3d72c0c0:0", "lme:answer_447052a5_2:0", True),
    ("lme:3b5d9c2d:6", "lme:3b5d9c2d:8", False),
    ("lme:a98ff421_1:8", "lme:a98ff421_1:10", True),
    ("lme:2ecc393e:10", "lme:52498502_2:6", True),
    ("lme:93450132:2", "lme:a3f932d4:10", True),
    ("lme:9ee69ca6_2:8", "lme:9ee69ca6_2:10", True),
    ("locomo:conv-42:D14:27", "locomo:conv-42:D25:29", False),
    ("lme:9a2ed8f0_1:10", "lme:answer_53582e7e_1:8", True),
    ("lme:5767bad6:2", "lme:c620a59e:4", True),
    ("lme:057cbbc4_1:8", "lme:057cbbc4_1:10", False),
    ("lme:5d4ff8db_2:2", "lme:answer_3e9fce53_1:2", True),
    ("lme:baf0243b_1:6", "lme:baf0243b_1:8", True),
    ("lme:9f6bec4f:4", "lme:9f6bec4f:6", True),
    ("lme:1a5344e9_3:8", "lme:1a5344e9_3:10", True),
    ("lme:695bc054_1:6", "lme:83cfab9f_2:8", True),
    ("lme:answer_0b4a8adc_1:8", "lme:answer_0b4a8adc_1:10", True),
    ("lme:answer_c44b9df4_1:6", "lme:answer_c44b9df4_1:10", True),
    ("locomo:conv-26:D7:25", "locomo:conv-26:D7:26", False),
    ("lme:6608c1da:2", "lme:answer_fcff2dc4_3:2", True),
    ("lme:a113eec0:6", "lme:bae61901_2:4", True),
    ("lme:2d58d2d2:8", "lme:2f8e196e:6", True),
    ("lme:14940349_2:8", "lme:c77250d2:8", True),
    ("lme:4b495a04_1:4", "lme:aa312a08:6", True),
    ("locomo:conv-30:D7:13", "locomo:conv-30:D13:17", False),
    ("lme:ab46b602:6", "lme:ab46b602:8", True),
    ("lme:372544ba:8", "lme:372544ba:10", True),
    ("lme:4fe27c66_4:8", "lme:acbb04c7:0", False),
    ("lme:05793e59_1:8", "lme:05793e59_1:10", True),
    ("lme:096f1cd0_2:4", "lme:b818e2a1_1:10", True),
    ("locomo:conv-42:D17:20", "locomo:conv-42:D24:16", True),
    ("lme:5cb6bdba_1:0", "lme:6aa87dc3:0", True),
    ("lme:5767bad6:10", "lme:c620a59e:4", True),
    ("lme:2ed8bd4a_2:8", "lme:2ed8bd4a_2:10", True),
    ("lme:1a5344e9_3:6", "lme:1a5344e9_3:8", True),
    ("lme:4be0ae18:8", "lme:4be0ae18:10", True),
    ("lme:29b1addb_2:8", "lme:29b1addb_2:10", False),
    ("lme:71f2b8ba:10", "lme:80adf3fb:10", True),
    ("lme:096f1cd0_2:4", "lme:b818e2a1_1:2", True),
    ("lme:096f1cd0_2:4", "lme:80a5717e_1:2", True),
    ("lme:2b4104e3_2:6", "lme:80a5717e_1:2", True),
    ("locomo:conv-43:D6:23", "locomo:conv-43:D24:20", True),
    ("lme:0566c21b:2", "lme:0566c21b:4", False),
    ("lme:042c55a5:0", "lme:answer_b0f3dfff_1:0", True),
    ("lme:answer_6dc4305e:6", "lme:answer_6dc4305e:8", True),
    ("lme:a8179676:8", "lme:a8179676:10", True),
    ("lme:35955958_2:10", "lme:5b83c26e_3:10", True),
    ("lme:096f1cd0_2:4", "lme:2b4104e3_2:6", True),
    ("lme:1e26715f:0", "lme:30436e4f_1:8", True),
    ("lme:85a49fe0_2:4", "lme:85a49fe0_3:6", True),
    ("lme:37beb8da:0", "lme:8d0b4363:0", False),
    ("locomo:conv-41:D24:16", "locomo:conv-41:D32:16", False),
    ("locomo:conv-41:D4:20", "locomo:conv-41:D28:7", True),
    ("lme:37beb8da:0", "lme:40c77045:0", False),
    ("lme:4e3da326_1:4", "lme:answer_1bb63ea5_2:6", True),
    ("lme:answer_80d6d664_2:6", "lme:answer_80d6d664_2:8", False),
    ("lme:answer_f6168136:10", "lme:bb914c5c_1:6", True),
    ("lme:1064ed80_2:10", "lme:39814eaa_2:6", True),
    ("lme:07c600e2:10", "lme:481d72d4:0", True),
    ("lme:59fc4d6b:2", "lme:7e2c6065:2", False),
    ("lme:59403629:10", "lme:8a4850d0:10", False),
    ("lme:9ac77ac9_1:6", "lme:9ac77ac9_2:8", True),
    ("lme:2b4104e3_2:6", "lme:b818e2a1_1:2", True),
    ("lme:6dfb33f1_1:10", "lme:c388319c_1:10", True),
    ("lme:1410aa4b_1:2", "lme:1410aa4b_1:6", False),
    ("lme:1b474144:8", "lme:4f90c2e7:4", True),
    ("lme:65bc93cf_2:2", "lme:b818e2a1_1:10", True),
    ("lme:8cf0d2a9:0", "lme:c3c334ff_1:8", False),
    ("lme:76abf73e_1:8", "lme:c60f42bd:0", True),
    ("locomo:conv-30:D3:1", "locomo:conv-30:D3:12", False),
    ("lme:65bc93cf_2:2", "lme:b818e2a1_1:2", True),
    ("lme:2f919734:6", "lme:answer_f7fd1029_1:4", True),
    ("lme:2ecc393e:2", "lme:2ecc393e:10", False),
    ("lme:4f5880c6_2:2", "lme:a355659a:0", True),
]
