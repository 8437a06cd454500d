"""Judging the evidence: policy packs, their rules and waivers, findings and the opinion."""
