from zhen import screened_argmax as sa
sa.PACK_AFTER = 0
def old(): sa.FEW_ROWS_MIN_WEIGHT = 8 << 20
def new(): sa.FEW_ROWS_MIN_WEIGHT = 1 << 20
VARIANTS = {"int_mm": old, "fbgemm": new}
