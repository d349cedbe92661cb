"""Skills: named, tagged lists of steps an agent keeps (``store.SkillStore``), their
records and checks (``records``), their Markdown files (``markdown``) and their SQL
(``repository``)."""

from .records import Skill, SkillExport, SkillImport
from .store import SkillStore

__all__ = ["Skill", "SkillExport", "SkillImport", "SkillStore"]
