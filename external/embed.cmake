# cmake -DIN=file -DOUT=file.inc -P embed.cmake: writes IN's bytes as a C initializer list.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "${bytes}\n")
