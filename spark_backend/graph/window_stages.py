"""(being built)"""
STAGES: dict = {}
