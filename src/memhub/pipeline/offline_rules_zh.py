"""Chinese rules of the offline extractor (see `offline_rules` for how rules are applied)."""

from __future__ import annotations

import re

from memhub.pipeline.offline_dates import find_time_zh
from memhub.pipeline.offline_rules import (
    EVENT,
    IDENTITY,
    INSTRUCTION,
    PREFERENCE,
    Built,
    Context,
    Rule,
    clip,
    rule,
)

_SELF = re.compile(r"我(?!们)")


def third_person(text: str) -> str:
    """我 → 用户 (我们 stays: it is the team, not the user)."""
    return _SELF.sub("用户", text)


def topic_of(text: str) -> str:
    """The first few characters of an object phrase, for scene names."""
    return clip(re.sub(r"（.*?）", "", text), 12)


# Objects that only make sense inside the conversation ("我喜欢你", "我爱这个").
_DEICTIC = re.compile(r"^(?:你|您|它|他|她|这|那|这个|那个|这样|那样|这些|那些|它们|你们|一下)")
_FEELING = re.compile(
    r"^(?:很|好|有点|有些|非常|太|真|特别|挺|超)?(?:累|开心|高兴|难过|无聊|饿|困|忙|烦|郁闷|生气|紧张|兴奋|伤心|疲惫|焦虑)"
)


def _object(text: str) -> str | None:
    obj = clip(text, 80)
    if not obj or _DEICTIC.match(obj):
        return None
    return third_person(obj)


# ---------------------------------------------------------------- instructions


@rule("call_me", INSTRUCTION, 85, r"(?:以后|今后)?(?:请)?(?:你)?(?:就)?(?:叫我|称呼我为?|喊我)(?P<o>[^，,。]{1,20})$")
def _call_me(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"用户希望被称呼为{obj}。", obj) if obj else None


@rule(
    "absolute",
    INSTRUCTION,
    -1,
    r"(?:请)?(?:你)?(?:以后)?(?P<m>永远|始终|一律|每次都|任何时候都|无论如何都|总是)(?P<r>.+)",
)
def _absolute(m: re.Match[str], ctx: Context) -> Built | None:
    rest = clip(third_person(m["r"]))
    return Built(f"用户要求{m['m']}{rest}。", topic_of(rest)) if rest else None


@rule(
    "from_now_on",
    INSTRUCTION,
    90,
    r"(?:请)?(?:你)?(?P<m>以后|今后|从现在开始|从现在起|从今以后|往后)[，,]?(?:请)?(?:你)?(?:都|就)?(?P<r>.+)",
)
def _from_now_on(m: re.Match[str], ctx: Context) -> Built | None:
    rest = m["r"]
    if rest.startswith("我"):
        return None  # the user's own resolution, not an instruction
    if a := _absolute.pattern.match(rest):
        return _absolute.build(a, ctx)
    rest = clip(third_person(rest))
    return Built(f"用户要求以后{rest}。", topic_of(rest)) if rest else None


@rule("dont", INSTRUCTION, 80, r"(?:请)?(?:你)?(?P<m>千万不要|千万别|不要|不许|禁止|不准|别)(?P<r>.+)")
def _dont(m: re.Match[str], ctx: Context) -> Built | None:
    if re.match(r"担心|客气|急|着急|紧|谢|管|生气|介意|难过|怕|说了|闹|开玩笑|废话|忘", m["r"]):
        return None  # chit-chat, or "别忘了" which the remember rule reads
    rest = clip(third_person(m["r"]))
    return Built(f"用户要求{m['m']}{rest}。", topic_of(rest)) if rest else None


@rule("please", INSTRUCTION, 80, r"请(?:你)?(?P<m>务必|一定要?|每次都?|尽量)(?P<r>.+)")
def _please(m: re.Match[str], ctx: Context) -> Built | None:
    rest = clip(third_person(m["r"]))
    return Built(f"用户要求{m['m']}{rest}。", topic_of(rest)) if rest else None


@rule(
    "language",
    INSTRUCTION,
    75,
    r"(?:请)?(?:你)?(?:用|使用)(?P<l>简体中文|繁体中文|中文|英文|英语|日语|日文|粤语|韩语)(?P<r>回答|回复|交流|写|说话|沟通|和我说话)",
)
def _language(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"用户要求用{m['l']}{third_person(m['r'])}。", m["l"])


# ---------------------------------------------------------------- persona: preferences and identity


@rule("favourite", PREFERENCE, 75, r"我(?:最喜欢|最爱)的(?P<w>.{1,10}?)(?:是|就是)(?P<o>.+)")
def _favourite(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户最喜欢的{m['w']}是{obj}。", obj) if obj else None


@rule("name", IDENTITY, 90, r"(?:我叫|我的名字(?:是|叫)|我名字叫|我名叫|大家都叫我)(?P<o>[^\s，,。]{1,20})$")
def _name(m: re.Match[str], ctx: Context) -> Built | None:
    name = clip(m["o"])
    return Built(f"用户叫{name}。", name) if name else None


@rule("age", IDENTITY, 75, r"我(?:今年)?(?P<n>\d{1,3}|[一二三四五六七八九十]{1,3})(?:岁|周岁)")
def _age(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"用户今年{m['n']}岁。", "年龄")


@rule("allergy", IDENTITY, 95, r"我(?:也|对)?对?(?P<o>.+?)过敏")
def _allergy(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户对{obj}过敏。", obj) if obj else None


@rule("residence", IDENTITY, 80, r"我(?:现在|目前|一直)?(?:住在|生活在|定居在)(?P<o>.+)")
def _residence(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户住在{obj}。", obj) if obj else None


@rule("residence", IDENTITY, 80, r"我(?:已经|最近|刚)?搬(?:到|去)了?(?P<o>.+)")
def _moved(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户搬到了{obj}。", obj) if obj else None


@rule("origin", IDENTITY, 70, r"我(?:来自|老家在|老家是)(?P<o>.+)")
def _origin(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户来自{obj}。", obj) if obj else None


@rule("work", IDENTITY, 80, r"我(?:现在|目前)?在(?P<o>.+?)(?P<v>工作|上班|实习|上学|读书|读研|读博|任职)$")
def _work(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户在{obj}{m['v']}。", obj) if obj else None


_ATTRIBUTES = (
    r"名字|生日|邮箱|电话|手机号|家乡|老家|专业|职业|工作|血型|老婆|妻子|丈夫|老公|男朋友|女朋友|儿子|女儿|孩子|"
    r"妈妈|母亲|爸爸|父亲|哥哥|姐姐|弟弟|妹妹|猫|狗|宠物|老板|领导|时区|母语"
)


@rule("attribute", IDENTITY, 80, rf"我的?(?P<a>{_ATTRIBUTES})(?P<s>的名字|的生日)?(?P<v>是|叫|在)(?P<o>.+)")
def _attribute(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    if obj is None:
        return None
    return Built(f"用户的{m['a']}{m['s'] or ''}{m['v']}{obj}。", m["a"])


_RELATIONS = (
    r"老婆|妻子|丈夫|老公|男朋友|女朋友|儿子|女儿|孩子|妈妈|母亲|爸爸|父亲|哥哥|姐姐|弟弟|妹妹|猫|狗|宠物|老板|领导|"
    r"朋友|同事|室友|家人"
)


@rule("relation", IDENTITY, 65, rf"我的?(?P<r>{_RELATIONS})(?P<o>[^，,]{{2,}})")
def _relation(m: re.Match[str], ctx: Context) -> Built | None:
    """ "我老婆喜欢咖啡" → "用户的老婆喜欢咖啡": what the people (and pets) around the user do."""
    obj = _object(m["o"])
    if obj is None:
        return None
    timed = find_time_zh(ctx.sentence, ctx.today) is not None  # "我老婆昨天生了孩子" is an event with its date
    return Built(f"用户的{m['r']}{obj}。", m["r"], family=EVENT if timed else None)


@rule(
    "status",
    IDENTITY,
    80,
    r"我(?:已经|现在)?(?P<o>吃素|是素食者|是素食主义者|结婚了|已婚|单身|离婚了|怀孕了|退休了|是左撇子|有孩子了)",
)
def _status(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"用户{m['o']}。", m["o"])


@rule(
    "household",
    IDENTITY,
    65,
    r"我(?:家)?有(?P<o>[一两二三四五六七八九十几\d]+(?:个|只|条|位|名|头)[^，。]{0,6}?"
    r"(?:孩子|儿子|女儿|猫|狗|宠物|兄弟|姐妹|哥哥|姐姐|弟弟|妹妹|娃))",
)
def _household(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"用户有{m['o']}。", m["o"])


@rule("learning", IDENTITY, 65, r"我(?:最近|现在)?(?:正在|在)学(?:习)?(?P<o>.+)")
def _learning(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户在学{obj}。", obj) if obj else None


@rule("language_skill", IDENTITY, 70, r"我(?:会说|会讲)(?P<o>.+)")
def _speaks(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户会说{obj}。", obj) if obj else None


_PREF_ADVERBS = r"(?:很|非常|特别|超级?|真的|比较|一直|也|还是|挺|蛮|都|最)*"
_PREF_VERBS = (
    r"不太喜欢|不喜欢|不爱吃|不爱喝|不爱|讨厌|受不了|不吃|不喝|更喜欢|更爱|喜欢|爱吃|爱喝|爱看|爱玩|热爱|偏爱|偏好|爱"
)


@rule("preference", PREFERENCE, 70, rf"我(?P<a>{_PREF_ADVERBS})(?P<v>{_PREF_VERBS})(?P<o>.+)")
def _preference(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户{m['a']}{m['v']}{obj}。", obj) if obj else None


_NOT_IDENTITY = re.compile(
    r"^(?:说|问|想|不是|在|因为|觉得|真的|来|否|要|指|认真|开玩笑|故意|随便|不|怎么|谁|从|为了|自己|这么|那么|挺|很|有点|刚|第|对|跟|和)"
)


@rule("identity", IDENTITY, 75, r"我(?:现在|目前|也)?(?:是|当)(?:一名|一个|一位|个|名)?(?P<o>.{1,20})$")
def _identity(m: re.Match[str], ctx: Context) -> Built | None:
    if _NOT_IDENTITY.match(m["o"]):
        return None
    obj = _object(m["o"])
    return Built(f"用户是{obj}。", obj) if obj else None


# ---------------------------------------------------------------- plans and dated events


@rule("plan", EVENT, 70, r"我(?:正在|一直|已经)?(?P<v>打算|计划|准备)(?P<o>.+)")
def _plan(m: re.Match[str], ctx: Context) -> Built | None:
    obj = _object(m["o"])
    return Built(f"用户{m['v']}{obj}。", obj) if obj else None


@rule("dated_event", EVENT, 65, r".+")
def _dated_event(m: re.Match[str], ctx: Context) -> Built | None:
    sentence = m.group(0)
    ref = find_time_zh(sentence, ctx.today)
    if ref is None:
        return None
    if ref.pos == 0 and sentence[len(ref.text) :].lstrip("，, ").startswith("我"):
        rest = sentence[len(ref.text) :].lstrip("，, ")[1:]  # "明天我要去北京" → "用户明天要去北京"
        when = ref.text
    elif sentence.startswith("我"):
        rest, when = sentence[1:], ""
    else:
        return None
    body = rest.replace(ref.text, "") if not when else rest
    if len(body) < 2 or _FEELING.match(re.sub(r"^[今明昨][天晚早]", "", body)):
        return None  # "我今天好累": a passing feeling, not an event
    text = clip(f"用户{when}{third_person(rest)}")
    return Built(f"{text}。", topic_of(body), priority=65 if ref.relative else 75)


RULES_ZH: tuple[Rule, ...] = (
    _call_me,
    _absolute,
    _from_now_on,
    _dont,
    _please,
    _language,
    _favourite,
    _name,
    _age,
    _allergy,
    _residence,
    _moved,
    _origin,
    _work,
    _attribute,
    _relation,
    _status,
    _household,
    _learning,
    _speaks,
    _preference,
    _identity,
    _plan,
)
# Any sentence about the user with a time in it; tried last, after every more specific rule.
DATED_EVENT_ZH = _dated_event

# ---------------------------------------------------------------- sentence cleanup and questions

FILLERS_ZH = re.compile(
    r"^(?:(?:其实|对了|另外|顺便说一下|顺便说一句|顺便|还有|哦|噢|嗯|啊|说实话|老实说|话说|然后|而且|不过|但是|所以|"
    r"那个|好的|好吧|是的|对|嗨|你好|哈哈)[，,、\s!！]*)+"
)
QUESTION_ZH = re.compile(
    r"(?:[吗嘛呢么]$|什么|怎么|为什么|为啥|哪里|哪儿|哪个|多少|几点|是不是|能不能|可不可以|有没有|要不要|会不会|对不对|好不好)"
)
