"""The LLM judge: the client, its prompt templates, a served local judge, and what judging costs.

A leaf of the pipeline: the judged scorers use it; it imports no scorer.
"""

from evalgate.judge.accounting import DEFAULT_PRICES, JudgeRun, Tally, cost_usd
from evalgate.judge.client import Judge, judge_for, parse_reply
from evalgate.judge.errors import JudgeError

__all__ = ["DEFAULT_PRICES", "Judge", "JudgeError", "JudgeRun", "Tally", "cost_usd", "judge_for", "parse_reply"]
