"""Generated protocol code lives in craits.v1 (built from proto/ by gen_proto.py)."""
