"""The MoE decode-gap study: is the M = 1 expert gather the dominant term of the decode gap?"""
