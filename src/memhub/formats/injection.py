"""Heuristics for text that reads like an attempt to re-instruct an agent (English and Chinese).

Conversation text is data. The pipeline flags memories that match (`injection_suspect`) and recall
never puts a matching memory or turn into a prompt; nothing here ever changes what is stored.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

_INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|any|your|system)\b"
        r".{0,20}\b(?:instructions?|prompts?|rules|directions|guidelines|messages)\b",
        r"\byou are now\b",
        r"\bsystem\s*prompt\b",
        r"\bdeveloper\s+mode\b",
        r"\bjailbreak|\bDAN\s+mode\b|\bdo anything now\b",
        r"\b(?:reveal|show|print|repeat|output|leak|tell me)\b.{0,20}\b(?:your|the)\s+"
        r"(?:system\s+|hidden\s+|initial\s+)?(?:prompt|instructions)\b",
        r"\bpretend\s+(?:to be|you are|that you)\b|\bact as if you\b",
        r"\bnew instructions\s*:|\bfollow (?:these|my) new instructions\b",
        r"<\s*/?\s*(?:system|assistant|developer)\s*>",
        r"\bdo not follow (?:the |your )?(?:system|developer|previous)\b",
        # A claimed override of the rules, and a request to send someone's secrets off to an address.
        r"\b(?:system|admin|security|safety)\s+override\b",
        r"\b(?:send|post|upload|forward|exfiltrate|transmit|leak|e-?mail)\b.{0,20}\b(?:the\s+user'?s?|users'|your|their)"
        r"\b.{0,30}\b(?:secrets?|credentials?|passwords?|tokens?|api[\s_-]?keys?|private[\s_-]?keys?|cookies)\b"
        r".{0,60}(?:https?|ftp)://",
        r"忽略(?:之前|以上|上面|前面|先前|所有|一切)(?:的)?(?:所有)?(?:指令|指示|规则|提示|设定|要求)",
        r"(?:忘记|忘掉|无视|不要理会|不要遵守)(?:之前|以上|上面|所有|你的)(?:的)?(?:所有)?(?:指令|规则|设定|提示词?|限制)",
        r"你现在是|从现在起你是|现在你是一个",
        r"扮演|假装你是|假装自己是",
        r"(?:输出|显示|告诉我|透露|泄露|打印|重复)(?:一下)?你的(?:系统)?(?:提示词|指令|设定|prompt)",
        r"系统提示词?",
        r"开发者模式|越狱|DAN模式",
        r"(?:发送|上传|转发|泄露|提交).{0,10}(?:用户|你)的?.{0,6}(?:密钥|密码|凭据|令牌|私钥|秘密).{0,30}https?://"
        r"|(?:用户|你)的?.{0,6}(?:密钥|密码|凭据|令牌|私钥|秘密).{0,20}(?:发送|上传|转发|泄露|提交).{0,10}https?://",
    )
)


# Every pattern above contains one of these words, so a text with none of them cannot match any: recall checks
# every candidate it returns, and one pass over this list costs a third of running all the patterns. ("dan mode",
# not "dan": the text is checked with its whitespace collapsed, and "dan" alone is in every "Daniel" and "dance".)
_TRIGGER_WORDS = re.compile(
    r"ignore|disregard|forget|override|you are now|system|developer|assistant|jailbreak|dan mode|do anything now"
    r"|prompt|instructions|pretend|act as if you|do not follow|://"
    r"|忽略|忘记|忘掉|无视|不要理会|不要遵守|你现在是|你是|扮演|假装|你的|系统提示|开发者模式|越狱",
    re.IGNORECASE,
)


# Recall checks the same candidates search after search (a scope's likely turns and memories recur), so verdicts
# are kept per text, by digest: a key of 16 bytes whatever the text's size, and no text kept alive by the cache.
_VERDICTS_MAX = 16_384
_verdicts: OrderedDict[bytes, bool] = OrderedDict()
_verdicts_lock = threading.Lock()


def looks_like_prompt_injection(text: str) -> bool:
    """True when text resembles an attempt to re-instruct the assistant (EN/ZH); only ever a flag."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _verdicts_lock:
        known = _verdicts.get(key)
        if known is not None:
            _verdicts.move_to_end(key)
            return known
    verdict = _matches(text)
    with _verdicts_lock:
        _verdicts[key] = verdict
        if len(_verdicts) > _VERDICTS_MAX:
            _verdicts.popitem(last=False)
    return verdict


def _matches(text: str) -> bool:
    normalized = re.sub(r"\s+", " ", text)
    if _TRIGGER_WORDS.search(normalized) is None:
        return False
    return any(p.search(normalized) for p in _INJECTION_PATTERNS)
