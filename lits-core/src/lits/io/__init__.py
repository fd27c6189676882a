"""What LiTS writes and how: durable files (:mod:`.durable`), JSON text (:mod:`.fastjson`), the run
directory's layout (:mod:`.layout`) and the redaction every printed or written text passes through
(:mod:`.secrets`).  The ground floor: nothing here imports the rest of LiTS.
"""
