# cmake -DCRD=... -DPROFILE_SCHEMA=... -DTEMPLATE=embedded_text.h.in -DOUTPUT=embedded_text.h -P embed_text.cmake
file(READ ${CRD} CRD_TEXT)
file(READ ${PROFILE_SCHEMA} PROFILE_SCHEMA_TEXT)
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
