"""The Unicode property names a JavaScript RegExp accepts in `\\p{..}` under the `u` flag, and how
`regex` must be told each so that it means the same characters.

ECMA-262 fixes the names (its tables of binary properties, General_Category values and Script
values), spelt exactly, case included: `\\p{Lu}` and `\\p{sc=Greek}` are patterns, `\\p{lu}`,
`\\p{Greek}` and `\\p{letter}` are syntax errors. `regex` reads names loosely and gives some
aliases another property (`IDC`, `VS`), so evalgate passes it the long name.
tests/test_jsregex.py holds every name to node's RegExp: accepted alike, the same characters.
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Binary properties: each alias and the long name it stands for; then every long name.
BINARY_ALIASES: dict[str, str] = {
    "AHex": "ASCII_Hex_Digit",
    "Alpha": "Alphabetic",
    "Bidi_C": "Bidi_Control",
    "Bidi_M": "Bidi_Mirrored",
    "CI": "Case_Ignorable",
    "CWCF": "Changes_When_Casefolded",
    "CWCM": "Changes_When_Casemapped",
    "CWL": "Changes_When_Lowercased",
    "CWKCF": "Changes_When_NFKC_Casefolded",
    "CWT": "Changes_When_Titlecased",
    "CWU": "Changes_When_Uppercased",
    "DI": "Default_Ignorable_Code_Point",
    "Dep": "Deprecated",
    "Dia": "Diacritic",
    "EComp": "Emoji_Component",
    "EMod": "Emoji_Modifier",
    "EBase": "Emoji_Modifier_Base",
    "EPres": "Emoji_Presentation",
    "ExtPict": "Extended_Pictographic",
    "Ext": "Extender",
    "Gr_Base": "Grapheme_Base",
    "Gr_Ext": "Grapheme_Extend",
    "Hex": "Hex_Digit",
    "IDSB": "IDS_Binary_Operator",
    "IDST": "IDS_Trinary_Operator",
    "IDC": "ID_Continue",
    "IDS": "ID_Start",
    "Ideo": "Ideographic",
    "Join_C": "Join_Control",
    "LOE": "Logical_Order_Exception",
    "Lower": "Lowercase",
    "NChar": "Noncharacter_Code_Point",
    "Pat_Syn": "Pattern_Syntax",
    "Pat_WS": "Pattern_White_Space",
    "QMark": "Quotation_Mark",
    "RI": "Regional_Indicator",
    "STerm": "Sentence_Terminal",
    "SD": "Soft_Dotted",
    "Term": "Terminal_Punctuation",
    "UIdeo": "Unified_Ideograph",
    "Upper": "Uppercase",
    "VS": "Variation_Selector",
    "space": "White_Space",
    "XIDC": "XID_Continue",
    "XIDS": "XID_Start",
}
BINARY: frozenset[str] = frozenset(
    {*BINARY_ALIASES.values(), "ASCII", "Any", "Assigned", "Cased", "Dash", "Emoji", "Math", "Radical"})
# `regex` has no table for it: evalgate refuses it by name rather than guess.
UNSUPPORTED = frozenset({"Changes_When_NFKC_Casefolded", "CWKCF"})

GENERAL_CATEGORY = _names("""
Cased_Letter LC Close_Punctuation Pe Connector_Punctuation Pc Control Cc cntrl Currency_Symbol Sc
Dash_Punctuation Pd Decimal_Number Nd digit Enclosing_Mark Me Final_Punctuation Pf Format Cf Initial_Punctuation
Pi Letter L Letter_Number Nl Line_Separator Zl Lowercase_Letter Ll Mark M Combining_Mark Math_Symbol Sm
Modifier_Letter Lm Modifier_Symbol Sk Nonspacing_Mark Mn Number N Open_Punctuation Ps Other C Other_Letter Lo
Other_Number No Other_Punctuation Po Other_Symbol So Paragraph_Separator Zp Private_Use Co Punctuation P punct
Separator Z Space_Separator Zs Spacing_Mark Mc Surrogate Cs Symbol S Titlecase_Letter Lt Unassigned Cn
Uppercase_Letter Lu
""")

SCRIPT = _names("""
Adlam Adlm Aghb Ahom Anatolian_Hieroglyphs Arab Arabic Armenian Armi Armn Avestan Avst Bali Balinese Bamu Bamum
Bass Bassa_Vah Batak Batk Beng Bengali Berf Beria_Erfe Bhaiksuki Bhks Bopo Bopomofo Brah Brahmi Brai Braille
Bugi Buginese Buhd Buhid Cakm Canadian_Aboriginal Cans Cari Carian Caucasian_Albanian Chakma Cham Cher Cherokee
Chorasmian Chrs Common Copt Coptic Cpmn Cprt Cuneiform Cypriot Cypro_Minoan Cyrillic Cyrl Deseret Deva
Devanagari Diak Dives_Akuru Dogr Dogra Dsrt Dupl Duployan Egyp Egyptian_Hieroglyphs Elba Elbasan Elym Elymaic
Ethi Ethiopic Gara Garay Geor Georgian Glag Glagolitic Gong Gonm Goth Gothic Gran Grantha Greek Grek Gujarati
Gujr Gukh Gunjala_Gondi Gurmukhi Guru Gurung_Khema Han Hang Hangul Hani Hanifi_Rohingya Hano Hanunoo Hatr Hatran
Hebr Hebrew Hira Hiragana Hluw Hmng Hmnp Hung Imperial_Aramaic Inherited Inscriptional_Pahlavi
Inscriptional_Parthian Ital Java Javanese Kaithi Kali Kana Kannada Katakana Kawi Kayah_Li Khar Kharoshthi
Khitan_Small_Script Khmer Khmr Khoj Khojki Khudawadi Kirat_Rai Kits Knda Krai Kthi Lana Lao Laoo Latin Latn Lepc
Lepcha Limb Limbu Lina Linb Linear_A Linear_B Lisu Lyci Lycian Lydi Lydian Mahajani Mahj Maka Makasar Malayalam
Mand Mandaic Mani Manichaean Marc Marchen Masaram_Gondi Medefaidrin Medf Meetei_Mayek Mend Mende_Kikakui Merc
Mero Meroitic_Cursive Meroitic_Hieroglyphs Miao Mlym Modi Mong Mongolian Mro Mroo Mtei Mult Multani Myanmar Mymr
Nabataean Nag_Mundari Nagm Nand Nandinagari Narb Nbat New_Tai_Lue Newa Nko Nkoo Nshu Nushu
Nyiakeng_Puachue_Hmong Ogam Ogham Ol_Chiki Ol_Onal Olck Old_Hungarian Old_Italic Old_North_Arabian Old_Permic
Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Onao Oriya Orkh Orya Osage Osge Osma Osmanya
Ougr Pahawh_Hmong Palm Palmyrene Pau_Cin_Hau Pauc Perm Phag Phags_Pa Phli Phlp Phnx Phoenician Plrd Prti
Psalter_Pahlavi Qaac Qaai Rejang Rjng Rohg Runic Runr Samaritan Samr Sarb Saur Saurashtra Sgnw Sharada Shavian
Shaw Shrd Sidd Siddham Sidetic Sidt SignWriting Sind Sinh Sinhala Sogd Sogdian Sogo Sora Sora_Sompeng Soyo
Soyombo Sund Sundanese Sunu Sunuwar Sylo Syloti_Nagri Syrc Syriac Tagalog Tagb Tagbanwa Tai_Le Tai_Tham Tai_Viet
Tai_Yo Takr Takri Tale Talu Tamil Taml Tang Tangsa Tangut Tavt Tayo Telu Telugu Tfng Tglg Thaa Thaana Thai
Tibetan Tibt Tifinagh Tirh Tirhuta Tnsa Todhri Todr Tolong_Siki Tols Toto Tulu_Tigalari Tutg Ugar Ugaritic
Unknown Vai Vaii Vith Vithkuqi Wancho Wara Warang_Citi Wcho Xpeo Xsux Yezi Yezidi Yi Yiii Zanabazar_Square Zanb
Zinh Zyyy Zzzz
""")

_CATEGORY_KEYS = ("General_Category", "gc")
_SCRIPT_KEYS = {"Script": "sc", "sc": "sc", "Script_Extensions": "scx", "scx": "scx"}


class UnsupportedProperty(ValueError):
    """A property JavaScript knows and evalgate cannot match as it does."""


def regex_name(name: str) -> str | None:
    """What to write inside `regex`'s `\\p{..}` for JavaScript's `\\p{name}`; None when JavaScript
    refuses the name (a syntax error in the pattern)."""
    key, equals, value = name.partition("=")
    if equals:
        if key in _CATEGORY_KEYS:
            return f"gc={value}" if value in GENERAL_CATEGORY else None
        short = _SCRIPT_KEYS.get(key)
        return f"{short}={value}" if short is not None and value in SCRIPT else None
    if name in GENERAL_CATEGORY:
        return f"gc={name}"
    if name in UNSUPPORTED:
        raise UnsupportedProperty(name)
    long = BINARY_ALIASES.get(name, name)
    return long if long in BINARY else None


def _loose(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(" ", "").lower()


def suggestion(name: str) -> str | None:
    """The exact spelling JavaScript takes for a name it refuses, when one reads the same loosely."""
    key, equals, value = name.partition("=")
    wanted = _loose(value if equals else name)
    if equals and _loose(key) in ("generalcategory", "gc"):
        pool = [f"gc={v}" for v in GENERAL_CATEGORY]
    elif equals and _loose(key) in ("script", "sc", "scriptextensions", "scx"):
        pool = [f"{_SCRIPT_KEYS.get(key, 'sc')}={v}" for v in SCRIPT]
    else:
        pool = [*GENERAL_CATEGORY, *BINARY, *BINARY_ALIASES, *(f"sc={v}" for v in SCRIPT)]
    return next((p for p in sorted(pool) if _loose(p.partition("=")[2] or p) == wanted), None)
