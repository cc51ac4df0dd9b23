"""Table 2's variants (the profile's [variants.<name>]): the split stages that a variant may change."""
from __future__ import annotations

from typing import Any

import luigi

from pipeline.config import VariantProfile
from tasks.data import SplitTask


class VariantTask(SplitTask):
    """A split's stage that a Table 2 variant (the profile's [variants.<name>]) may change; "" = the profile's."""

    variant = luigi.Parameter(default="", description="Table 2 variant: research, accelerated ('': the profile's)")

    def variant_config(self) -> VariantProfile | None:
        return self.profile_config.variant(self.variant) if self.variant else None

    def label(self) -> str:
        return f"{self.variant}-{self.split}" if self.variant else self.split

    def variant_params(self, **values: Any) -> dict[str, Any]:
        """The parameters a variant changes (nothing at all without one, so that artifact ids stay the same)."""
        return {"variant": self.variant, **values} if self.variant else {}
