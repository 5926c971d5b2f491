# Needs the temporary switch `_AB_OLD` that FastDecoder.decoder_steps had for this A/B (removed after: no gain).
from zhen import fast_generation as fg
def use_old(): fg._AB_OLD[0] = True
def use_new(): fg._AB_OLD[0] = False
VARIANTS = {"old": use_old, "new": use_new}
