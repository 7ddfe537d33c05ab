"""The runtime-context composer (docs/context.md): what one agent turn is given besides its history.

`ContextComposer.compose(caller, isolation, ComposeRequest)` → `Composition`: the mode of the fork, the retrieval
decision, the system part (fixed notes + 【Workspace knowledge】/【Agent knowledge】/【Standards in force】/
【Skill notes…】/【Recent conversation memory excerpt】), the user side, the sources used, the standards checked,
the caps and the `<knowledge_tools>` block. Served at `POST /v3/context/compose`; see docs/context.md.
"""

from memhub.context.composer import ContextComposer
from memhub.context.model import Capabilities, Caps, ComposeRequest, Composition
from memhub.context.skills import FinderSkills, NoSkills, SkillNote, SkillNotes, SkillSource
from memhub.context.sources import SYSTEM_TEAM

__all__ = [
    "SYSTEM_TEAM",
    "Capabilities",
    "Caps",
    "ComposeRequest",
    "Composition",
    "ContextComposer",
    "FinderSkills",
    "NoSkills",
    "SkillNote",
    "SkillNotes",
    "SkillSource",
]
