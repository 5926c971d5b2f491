import torch
def one(): torch.set_num_threads(1)
def two(): torch.set_num_threads(2)
VARIANTS = {"one": one, "two": two}
